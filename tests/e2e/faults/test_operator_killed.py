"""The operator SIGKILLed in the middle of a release, then started again.

The window: the plan is written and some, not all, of the gang's pods are released.
The operator releases slowly here (`SLOW_RELEASE`, its own client-side rate limit),
so a release of 8 pods lasts seconds, and it is killed the moment a watch shows the
first pod released: k of 8 pods are released at the kill, 0 < k < 8, asserted (the
count is read after the kill, when nothing changes any more).

What the observer cannot judge strictly: kube-scheduler binds a released pod whatever
the operator does, so the k pods released before the kill would run, a partial gang,
for as long as the operator is down. The pods carry a hold gate of the test's own
(`held`) so that none binds meanwhile; the assertion is on the operator's part: the
restarted operator finishes the release it finds written (every pod released, pinned
to the node of the plan written before the kill, which it does not change), and once
the holds are lifted the gang binds whole under the observer.
"""

from __future__ import annotations

import time

from devtools.factories import NodePool, lift_holds
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.faults.faults import begin_a_slow_held_release, released_of
from tests.e2e.support.harness import (
    pinned_to,
    pod_group,
    pods_of,
    scheduled_condition,
    wait_all_bound,
)
from tests.e2e.support.image import process_and_image

WORKERS = 8


@process_and_image
def test_an_operator_killed_mid_release_finishes_it_after_a_restart_and_the_gang_runs_whole(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    try:
        begin_a_slow_held_release(
            operator, kubectl, namespace, pool, group="train", workers=WORKERS
        )
        operator.kill()
        killed = time.monotonic()
        released, existing = released_of(kubectl, namespace, "train")
        assert existing == WORKERS
        assert 0 < released < WORKERS, f"{released} of {WORKERS} released at the kill"
        assert scheduled_condition(kubectl, namespace, "train")["status"] == "True"
        plan = pod_group(kubectl, namespace, "train")["status"]["plan"]
        assert len(plan) == WORKERS
    finally:
        if operator.process is None:
            operator.start()
        else:
            operator.restart()
    restarted = time.monotonic()

    def finished() -> bool:
        return released_of(kubectl, namespace, "train") == (WORKERS, WORKERS)

    wait_until("the restarted operator to finish the release", finished, timeout=60)
    finished_at = time.monotonic()
    pods = pods_of(kubectl, namespace, "train")
    assert {pod["metadata"]["name"]: pinned_to(pod) for pod in pods} == plan
    lift_holds(kubectl, namespace, pods)
    bound = wait_all_bound(kubectl, namespace, "train", WORKERS)
    assert {pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in bound} == plan
    print(
        f"operator killed mid-release: {released} of {WORKERS} pods released at the kill; "
        f"the restarted operator was ready {restarted - killed:.1f}s after the kill and "
        f"finished the release {finished_at - restarted:.1f}s later"
    )
