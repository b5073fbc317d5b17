"""A member lost after the rest of its gang succeeded: the pod its Job makes in its place
is released alone, and the Job completes.

A Job makes only the pods it still has to run (completions less those that succeeded).
Once the other members have succeeded, its replacement for a lost member is the whole
of what is left, however big minCount is: waiting for minCount pods would wait forever,
and the soak's lost Jobs (seed 1071721371: gangs released whole that never completed)
are of the kind this makes. Here the Job's pods run for a few seconds and one is deleted
as soon as all are bound; the Job makes its replacement only after its pod failure
backoff (10 s for a first failure), by when the others have succeeded, which the test
asserts (the window it aims at). Then the replacement is bound within the grace of its
creation, and the Job completes; kept in one zone, it goes where the gang ran, though
none of its members holds a node there any more (soak seed 174391727, soak-0149).
"""

from __future__ import annotations

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.waiting import wait_until

from tests.e2e.faults.faults import first_new_member, first_seen_bound
from tests.e2e.support.harness import pods_of, wait_all_bound
from tests.e2e.support.ledger import GRACE_SECONDS

WORKERS = 3
RUN_FOR = "4s"
ZONE = "topology.kubernetes.io/zone"


@pytest.mark.parametrize("zoned", [False, True], ids=["anywhere", "in-one-zone"])
def test_a_member_lost_after_the_others_succeeded_is_replaced_and_its_job_completes(
    kubectl: Kubectl, namespace: str, pool: NodePool, zoned: bool
) -> None:
    for zone in ("zone-a", "zone-b"):
        for _ in range(WORKERS):
            pool.add(gpus=1, zone=zone)
    annotations = {"scheduling.muster.dev/topology-key": ZONE} if zoned else {}
    job = gang_job("train", pool, workers=WORKERS, run_for=RUN_FOR, annotations=annotations)
    kubectl.apply(job, namespace=namespace)
    running = wait_all_bound(kubectl, namespace, "train", WORKERS, timeout=60)
    victim = running[0]["metadata"]["name"]
    others = {pod["metadata"]["name"] for pod in running[1:]}

    kubectl("delete", "pod", victim, "-n", namespace, "--wait=false")
    replacement, created = first_new_member(kubectl, namespace, "train", {victim, *others})
    phases = {
        pod["metadata"]["name"]: pod.get("status", {}).get("phase")
        for pod in pods_of(kubectl, namespace, "train")
    }
    assert {phases.get(name) for name in others} == {"Succeeded"}, (
        f"the others had not all succeeded when the replacement came: {phases}"
    )
    waited = first_seen_bound(kubectl, namespace, replacement) - created
    assert waited <= GRACE_SECONDS, f"replacement {replacement} bound {waited:.1f}s after creation"

    def completed() -> bool:
        job = kubectl.json("get", "job", "train", "-n", namespace)
        return bool(job.get("status", {}).get("succeeded", 0) == WORKERS)

    wait_until("the Job completes", completed, timeout=60)
    print(f"member lost after the others succeeded: replacement bound {waited:.1f}s after creation")
