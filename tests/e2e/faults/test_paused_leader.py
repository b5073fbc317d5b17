"""A leader frozen (SIGSTOP) past its Lease while a standby runs, then thawed (SIGCONT).

The standby takes the Lease over while the leader is frozen; work keeps arriving.
When the old leader wakes, its informers deliver what it missed and its queue holds
what it was about to do, but it can no longer prove that it leads: the audit log must
show no write from it after the takeover, and it must exit (status 2) to come back as
a standby. Its webhooks stop answering too: a Job created meanwhile is created again
until the standby's webhooks take it, as a submitter that retries would.
"""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime

import pytest

from muster.operator.app import EXIT_LOST_LEADERSHIP
from tests.e2e.cluster import Kubectl, LocalCluster, wait_until
from tests.e2e.faults.conftest import OPERATOR_FLAGS
from tests.e2e.faults.faults import audit_log, create_until_admitted, holder, user_agent
from tests.e2e.harness import NodePool, OperatorProcess, gang_job, wait_all_bound

pytestmark = pytest.mark.faults

LEADER, STANDBY = "muster-e2e", "muster-e2e-standby"


def test_a_leader_paused_past_its_lease_makes_no_write_after_the_takeover(
    operator: OperatorProcess,
    cluster: LocalCluster,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    for _ in range(3):
        pool.add(gpus=2)
    kubectl.apply(gang_job("before", pool, workers=2), namespace)
    wait_all_bound(kubectl, namespace, "before", 2)
    standby = operator.replica(STANDBY, *OPERATOR_FLAGS)
    standby.start()
    leader = operator.process
    assert leader is not None and holder(kubectl) == LEADER
    try:
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
    finally:
        if operator.process is not None and operator.process.poll() is None:
            operator.process.send_signal(signal.SIGCONT)
            operator.kill()
        operator.process = None
        operator.start()  # a standby now
        standby.stop()  # gives the Lease back
    wait_until("the first replica to lead again", lambda: holder(kubectl) == LEADER, 30)

    requests = audit_log(cluster.state_dir)
    takeover = min(
        r.received
        for r in requests
        if r.user_agent == user_agent(STANDBY) and r.resource == "leases" and r.write
        if r.code in (200, 201)
    )
    assert paused_at < takeover < resumed_at, "the takeover did not happen during the pause"
    old = [r for r in requests if r.user_agent == user_agent(LEADER) and r.write]
    assert any(r.received < paused_at for r in old), "the leader wrote nothing before the pause"
    after_takeover = [r for r in old if takeover <= r.received <= exited_at]
    assert after_takeover == [], f"the old leader wrote after the takeover: {after_takeover}"
