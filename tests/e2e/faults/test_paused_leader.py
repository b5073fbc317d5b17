"""A leader frozen (SIGSTOP) past its Lease while a standby runs, then thawed (SIGCONT).

The standby takes the Lease over while the leader is frozen; work keeps arriving.
When the old leader wakes, its informers deliver what it missed and its queue holds
what it was about to do, but it can no longer prove that it leads: the audit log must
show no write from it after the takeover, and it must exit (status 2) to come back as
a standby. Its webhooks stop answering too: a Job created meanwhile is created again
until the standby's webhooks take it, as a submitter that retries would.

The second test freezes the leader in the middle of a release, so that the writes it
thaws with are due for certain: it releases slowly (`SLOW_RELEASE`) and is frozen
the moment a watch shows the first pod released, k of 8 released, 0 < k < 8
(asserted). The standby takes over and finishes the release; the thawed leader's due
releases are turned away by its fence before they are sent (each says `NotLeading`
in its log, asserted: the window was hit), and none of its writes reaches the API
server after the takeover (the audit log). The pods carry the test's hold gate, so
that the k released pods do not run as a partial gang while the leader is frozen.
"""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime

from devtools.cluster.local import LocalCluster
from devtools.factories import NodePool, gang_job, lift_holds
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.operator.app import EXIT_LOST_LEADERSHIP
from tests.e2e.faults.conftest import OPERATOR_FLAGS
from tests.e2e.faults.faults import (
    Request,
    audit_log,
    begin_a_slow_held_release,
    beside_a_standby,
    create_until_admitted,
    holder,
    released_of,
    user_agent,
)
from tests.e2e.support.harness import pinned_to, pod_group, pods_of, wait_all_bound

LEADER, STANDBY = "muster-e2e", "muster-e2e-standby"
WORKERS = 8


def test_a_leader_paused_past_its_lease_makes_no_write_after_the_takeover(
    operator: OperatorProcess,
    cluster: LocalCluster,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    began_at = datetime.now(UTC)
    for _ in range(3):
        pool.add(gpus=2)
    kubectl.apply(gang_job("before", pool, workers=2), namespace)
    wait_all_bound(kubectl, namespace, "before", 2)
    with beside_a_standby(operator, STANDBY, *OPERATOR_FLAGS) as standby:
        standby.start()
        leader = operator.process
        assert leader is not None and holder(kubectl) == LEADER
        leader.send_signal(signal.SIGSTOP)
        paused_at, paused = datetime.now(UTC), time.monotonic()
        # Both replicas serve the webhooks behind the Service's stand-in; a call that
        # went to the frozen one times out, and the submitter creates the Job again.
        create_until_admitted(kubectl, namespace, gang_job("during", pool, workers=2))
        wait_until("the standby to hold the Lease", lambda: holder(kubectl) == STANDBY, 45)
        took_over = time.monotonic()
        wait_all_bound(kubectl, namespace, "during", 2, timeout=60)
        create_until_admitted(kubectl, namespace, gang_job("after", pool, workers=2))
        resumed_at, resumed = datetime.now(UTC), time.monotonic()
        leader.send_signal(signal.SIGCONT)
        assert leader.wait(timeout=30) == EXIT_LOST_LEADERSHIP
        exited_at = datetime.now(UTC)  # the same identity writes again only after this
        exited = time.monotonic() - resumed
        wait_all_bound(kubectl, namespace, "after", 2, timeout=60)
        print(
            f"paused leader: the standby led {took_over - paused:.1f}s after the pause; "
            f"the thawed leader exited {exited:.1f}s after SIGCONT"
        )

    assert_no_write_after_the_takeover(cluster, began_at, paused_at, resumed_at, exited_at)


def assert_no_write_after_the_takeover(
    cluster: LocalCluster,
    began_at: datetime,
    paused_at: datetime,
    resumed_at: datetime,
    exited_at: datetime,
) -> list[Request]:
    """The audit log's word: the standby took the Lease over while the leader was
    frozen (its first Lease write after the pause), and the old leader, which wrote
    since the test began, wrote nothing from the takeover until it exited (after which
    the same identity is a new process). The log holds the earlier tests' requests
    too, so each window is bounded by a moment of this test's. The leader's writes
    between the test's start and the pause, returned."""
    requests = audit_log(cluster.state_dir)
    takeover = min(
        (
            r.received
            for r in requests
            if r.user_agent == user_agent(STANDBY) and r.resource == "leases" and r.write
            if r.code in (200, 201) and r.received > paused_at
        ),
        default=None,
    )
    assert takeover is not None, "the standby never took the Lease after the pause"
    assert takeover < resumed_at, "the takeover did not happen during the pause"
    old = [r for r in requests if r.user_agent == user_agent(LEADER) and r.write]
    before = [r for r in old if began_at <= r.received < paused_at]
    assert before, "the leader wrote nothing before the pause"
    after_takeover = [r for r in old if takeover <= r.received <= exited_at]
    assert after_takeover == [], f"the old leader wrote after the takeover: {after_takeover}"
    return before


def test_a_leader_frozen_mid_release_lands_none_of_its_due_releases_after_the_takeover(
    operator: OperatorProcess,
    cluster: LocalCluster,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    began_at = datetime.now(UTC)
    with beside_a_standby(operator, STANDBY, *OPERATOR_FLAGS) as standby:
        begin_a_slow_held_release(
            operator, kubectl, namespace, pool, group="train", workers=WORKERS
        )
        leader = operator.process
        assert leader is not None
        leader.send_signal(signal.SIGSTOP)
        paused_at = datetime.now(UTC)
        released, existing = released_of(kubectl, namespace, "train")
        assert existing == WORKERS
        assert 0 < released < WORKERS, f"{released} of {WORKERS} released at the pause"
        plan = pod_group(kubectl, namespace, "train")["status"]["plan"]
        standby.start()
        wait_until("the standby to hold the Lease", lambda: holder(kubectl) == STANDBY, 45)
        wait_until(
            "the new leader to finish the release",
            lambda: released_of(kubectl, namespace, "train") == (WORKERS, WORKERS),
            timeout=60,
        )
        thawed_from = operator.log_path.stat().st_size
        resumed_at = datetime.now(UTC)
        leader.send_signal(signal.SIGCONT)
        assert leader.wait(timeout=30) == EXIT_LOST_LEADERSHIP
        exited_at = datetime.now(UTC)
        # The plan the new leader carried out is the one written before the pause; the
        # holds go before the release timeout would roll the gang back.
        pods = pods_of(kubectl, namespace, "train")
        assert {pod["metadata"]["name"]: pinned_to(pod) for pod in pods} == plan
        lift_holds(kubectl, namespace, pods)
        wait_all_bound(kubectl, namespace, "train", WORKERS)

    with operator.log_path.open("rb") as log:
        log.seek(thawed_from)
        thawed = log.read().decode(errors="replace").splitlines()
    turned_away = [line for line in thawed if "NotLeading" in line and "/pods/train-" in line]
    assert turned_away, "the thawed leader had no release due: the fault missed its window"
    before = assert_no_write_after_the_takeover(cluster, began_at, paused_at, resumed_at, exited_at)
    assert any(r.resource == "pods" and r.verb == "patch" for r in before)
    print(
        f"leader frozen mid-release: {released} of {WORKERS} pods released at the pause; "
        f"thawed, it turned {len(turned_away)} due releases away unsent"
    )
