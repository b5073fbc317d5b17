"""A member pod deleted in the middle of its gang's release.

The window: the plan is written and k of n pods are released, 0 < k < n, counted just
before the deletion is sent (the operator releases slowly here, `SLOW_RELEASE`). The
pod deleted is one already released. Its Job makes a new pod in its place, which the
operator must take into the gang (placed and released beside the others), or else
roll the gang back whole; either way the gang ends whole, never partial.

As in the kill test, the pods carry a hold gate of the test's own (`held`) so that
none binds before the test lifts it, once every pod of the gang is released: what is
asserted is that the operator brings the gang to a whole release again (n pods, the
replacement included, each pinned where the written plan says), and the observer
then judges the binding. Without the hold, kube-scheduler would bind the pods
released before the deletion at once, and they would wait as a partial gang for the
replacement, whose Job creates it only after its pod failure backoff (10 s).
"""

from __future__ import annotations

import time

from devtools.factories import NodePool, lift_holds
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.faults.faults import begin_a_slow_held_release, released_of
from tests.e2e.support.harness import is_gated, pinned_to, pod_group, pods_of, wait_all_bound

WORKERS = 8


def test_a_member_deleted_mid_release_is_replaced_and_the_gang_runs_whole(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    try:
        begin_a_slow_held_release(
            operator, kubectl, namespace, pool, group="train", workers=WORKERS
        )
        pods = pods_of(kubectl, namespace, "train")
        released = [pod["metadata"]["name"] for pod in pods if not is_gated(pod)]
        victim = released[0]
        kubectl("delete", "pod", victim, "-n", namespace, "--wait=false")
        deleted = time.monotonic()
        assert len(pods) == WORKERS
        assert 0 < len(released) < WORKERS, f"{len(released)} of {WORKERS} released"

        def whole_again() -> bool:
            return released_of(kubectl, namespace, "train") == (WORKERS, WORKERS)

        wait_until("the gang to be released whole again", whole_again, timeout=90)
        recovered = time.monotonic() - deleted
        pods = pods_of(kubectl, namespace, "train")
        names = {pod["metadata"]["name"] for pod in pods}
        assert victim not in names
        plan = pod_group(kubectl, namespace, "train")["status"]["plan"]
        assert {pod["metadata"]["name"]: pinned_to(pod) for pod in pods} == {
            name: plan[name] for name in names
        }
        lift_holds(kubectl, namespace, pods)
        wait_all_bound(kubectl, namespace, "train", WORKERS)
    finally:
        operator.restart()
    print(
        f"member deleted mid-release: {len(released)} of {WORKERS} pods released at the "
        f"deletion; the gang was released whole again {recovered:.1f}s later"
    )
