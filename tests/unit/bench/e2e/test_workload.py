from __future__ import annotations

from bench.e2e.floor import FLOOR_GATE
from bench.e2e.workload import (
    HOSTNAME_KEY,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_REQUIRED_TOPOLOGY,
    LOCAL_QUEUE,
    SIZE_MIX,
    ZONE_KEY,
    GangJob,
    job_manifest,
    make_workload,
)
from hack.kueue import QUEUE_NAME_LABEL

from muster.api.constants import TOPOLOGY_PREFERRED_ANNOTATION
from muster.api.optin import read_job_opt_in


def test_the_workload_is_reproducible_and_keeps_the_size_mix() -> None:
    first = make_workload(jobs=32, gpus_per_pod=1, zone_share=0.25, seed=7)
    assert first == make_workload(jobs=32, gpus_per_pod=1, zone_share=0.25, seed=7)
    assert sorted(job.size for job in first) == sorted(SIZE_MIX * 2)
    assert sum(job.size for job in first) == 8 * 32
    assert len({job.name for job in first}) == 32


def test_every_mode_asks_for_the_same_gang() -> None:
    job = make_workload(jobs=1, gpus_per_pod=2, zone_share=1.0, seed=1)[0]
    for mode in ("muster", "native"):
        manifest = job_manifest(job, mode, namespace="bench", hold="1h")
        opt_in = read_job_opt_in(manifest)
        assert opt_in is not None
        assert (opt_in.min_count, opt_in.topology_key) == (job.size, ZONE_KEY)
    plain = job_manifest(job, "plain", namespace="bench", hold="1h")
    assert read_job_opt_in(plain) is None
    affinity = plain["spec"]["template"]["spec"]["affinity"]["podAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == ZONE_KEY


def test_kueue_alone_asks_its_topology_aware_scheduling_for_the_same_rule() -> None:
    zone_job, free_job = make_workload(jobs=2, gpus_per_pod=1, zone_share=0.5, seed=4)
    assert (zone_job.topology_key, free_job.topology_key) == (ZONE_KEY, None)
    for job, annotation, level in (
        (zone_job, KUEUE_REQUIRED_TOPOLOGY, ZONE_KEY),
        (free_job, KUEUE_PREFERRED_TOPOLOGY, HOSTNAME_KEY),
    ):
        manifest = job_manifest(job, "kueue", namespace="bench", hold="1h")
        assert manifest["metadata"]["labels"] == {QUEUE_NAME_LABEL: LOCAL_QUEUE}
        assert manifest["spec"]["template"]["metadata"]["annotations"][annotation] == level
        assert read_job_opt_in(manifest) is None
        assert "affinity" not in manifest["spec"]["template"]["spec"]


def test_beside_muster_kueue_only_queues_the_gang_muster_places() -> None:
    job = make_workload(jobs=1, gpus_per_pod=1, zone_share=1.0, seed=1)[0]
    manifest = job_manifest(job, "kueue-muster", namespace="bench", hold="1h")
    assert manifest["metadata"]["labels"][QUEUE_NAME_LABEL] == LOCAL_QUEUE
    opt_in = read_job_opt_in(manifest)
    assert opt_in is not None
    assert (opt_in.min_count, opt_in.topology_key) == (job.size, ZONE_KEY)
    annotations = manifest["spec"]["template"]["metadata"]["annotations"]
    assert not {KUEUE_REQUIRED_TOPOLOGY, KUEUE_PREFERRED_TOPOLOGY} & set(annotations)


def test_a_preferred_level_is_asked_of_muster_and_of_kueue_alike() -> None:
    job = GangJob("g", 4, 8, topology_key=None, preferred_key="example.com/rack")
    muster = job_manifest(job, "muster", namespace="bench", hold="1h")
    assert muster["metadata"]["annotations"][TOPOLOGY_PREFERRED_ANNOTATION] == "example.com/rack"
    kueue = job_manifest(job, "kueue", namespace="bench", hold="1h")
    annotations = kueue["spec"]["template"]["metadata"]["annotations"]
    assert annotations[KUEUE_PREFERRED_TOPOLOGY] == "example.com/rack"
    assert KUEUE_REQUIRED_TOPOLOGY not in annotations


def test_the_floor_is_the_plain_job_with_its_pods_gated() -> None:
    job = make_workload(jobs=1, gpus_per_pod=1, zone_share=1.0, seed=1)[0]
    plain = job_manifest(job, "plain", namespace="bench", hold="1h")
    floor = job_manifest(job, "floor", namespace="bench", hold="1h")
    pod_spec = floor["spec"]["template"]["spec"]
    assert pod_spec.pop("schedulingGates") == [{"name": FLOOR_GATE}]
    assert floor == plain
