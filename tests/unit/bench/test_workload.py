from __future__ import annotations

from bench.workload import SIZE_MIX, ZONE_KEY, job_manifest, make_workload

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
