"""A member of a running gang deleted: its replacement placed and bound at once.

The soak (seed 1796650542, at +415 s) deleted one of a running 8-pod gang's members
and saw the gang short for 10.6 s, past its grace: the Job controller creates the
replacement only after its pod failure backoff (10 s for a first failure), and a gang
cannot be whole again before there is a pod to place. What is Muster's part, and
asserted here: the members still running are left alone (not taken down, not moved),
and the replacement, once its Job creates it, is placed and bound within the grace of
its creation (`GRACE_SECONDS`, the observer's), where the gang's plan has room; the
Job is charged the one failure the deletion caused, no more.

The observer's own rule would count the Job's backoff against the gang (its fall
lasts from the deletion), so this test opts out of it and measures from the
replacement's creation, as the soak's judge does (hack/soak/excuses.py).
"""

from __future__ import annotations

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl

from tests.e2e.faults.faults import first_new_member, first_seen_bound
from tests.e2e.support.harness import bound, pods_of, wait_all_bound
from tests.e2e.support.ledger import GRACE_SECONDS

WORKERS = 4


@pytest.mark.allow_partial_gangs(
    "the Job replaces a deleted member only after its pod failure backoff: the gang is "
    "judged from the replacement's creation, below"
)
def test_a_running_members_replacement_is_bound_within_the_grace_of_its_creation(
    kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    for _ in range(WORKERS):
        pool.add(gpus=1)
    kubectl.apply(gang_job("train", pool, workers=WORKERS), namespace=namespace)
    running = wait_all_bound(kubectl, namespace, "train", WORKERS, timeout=60)
    victim = running[0]["metadata"]["name"]
    stayed = {pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in running[1:]}

    kubectl("delete", "pod", victim, "-n", namespace, "--wait=false")
    replacement, created = first_new_member(kubectl, namespace, "train", {victim, *stayed})
    bound_at = first_seen_bound(kubectl, namespace, replacement)

    pods = {pod["metadata"]["name"]: pod for pod in pods_of(kubectl, namespace, "train")}
    assert {name: pods[name]["spec"].get("nodeName") for name in stayed} == stayed
    assert len(bound(list(pods.values()))) == WORKERS
    job = kubectl.json("get", "job", "train", "-n", namespace)
    assert job["status"].get("failed", 0) == 1
    waited = bound_at - created
    assert waited <= GRACE_SECONDS, f"replacement {replacement} bound {waited:.1f}s after creation"
    print(f"running member deleted: its replacement bound {waited:.1f}s after its creation")
