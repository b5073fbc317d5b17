"""Two replicas: one leads through the Lease, the other takes over when it dies, and at
once when it stops cleanly; as local processes, and from the image."""

from __future__ import annotations

import datetime
import json
import time
from typing import Any

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.operator.config import OperatorConfig
from tests.e2e.support.harness import LEASE, wait_all_bound
from tests.e2e.support.image import process_and_image

pytestmark = pytest.mark.e2e

RETRY_PERIOD = OperatorConfig().lease_retry_period  # every replica here runs with it
# A clean stop hands over within a standby's retry period and this margin, however
# long the stopping replica takes to end the rest of its work.
HANDOVER_MARGIN = 5.0


def holder(kubectl: Kubectl) -> str | None:
    found = kubectl("get", *LEASE, "-o", "jsonpath={.spec.holderIdentity}", check=False)
    return found.stdout or None


def lease_spec(kubectl: Kubectl) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(kubectl("get", *LEASE, "-o", "json").stdout)["spec"]
    return spec


def wait_for_holder(kubectl: Kubectl, identity: str) -> None:
    wait_until(f"{identity} to hold the Lease", lambda: holder(kubectl) == identity, timeout=30)


def led_after(kubectl: Kubectl, identity: str, since: float) -> float:
    """Seconds from `since` (a time.time()) until `identity` took the Lease, read from
    the acquireTime it wrote by its own clock (this machine's)."""
    wait_for_holder(kubectl, identity)
    acquired = datetime.datetime.fromisoformat(lease_spec(kubectl)["acquireTime"])
    return acquired.timestamp() - since


def log_records(process: OperatorProcess) -> list[dict[str, Any]]:
    """The records of a process that logs JSON (`--log-format=json`)."""
    return [
        json.loads(line)
        for line in process.log_path.read_text().splitlines()
        if line.startswith("{")
    ]


def logged_at(process: OperatorProcess, prefix: str) -> float:
    """When the process last logged a message starting with `prefix`."""
    stamps = [
        record["timestamp"]
        for record in log_records(process)
        if record.get("message", "").startswith(prefix)
    ]
    assert stamps, f"no message starting with {prefix!r} in {process.log_path}"
    return datetime.datetime.fromisoformat(stamps[-1]).timestamp()


def replica(operator: OperatorProcess, identity: str) -> OperatorProcess:
    """Another replica beside the session's operator, logging JSON to a file of its own."""
    return operator.replica(identity, "--log-format=json")


def leader_metric(process: OperatorProcess) -> float:
    line = next(
        line for line in process.metrics().splitlines() if line.startswith("muster_leader ")
    )
    return float(line.split()[1])


@process_and_image
def test_a_standby_takes_over_when_the_leader_is_killed(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    standby = replica(operator, "muster-e2e-standby")
    standby.start()
    try:
        assert holder(kubectl) == "muster-e2e"
        assert leader_metric(operator) == 1
        assert leader_metric(standby) == 0

        operator.kill()
        killed, killed_at = time.monotonic(), time.time()
        # A warm standby: its cache listed the cluster before the Lease came to it.
        assert logged_at(standby, "cache synced") < killed_at
        wait_for_holder(kubectl, "muster-e2e-standby")
        print(f"the standby led {time.monotonic() - killed:.1f}s after the leader was killed")
        wait_until("the standby to be ready as leader", standby.ready)
        assert leader_metric(standby) == 1

        pool.add(gpus=2)
        kubectl.apply(gang_job("train", pool, workers=2), namespace)
        wait_all_bound(kubectl, namespace, "train", 2)
    finally:
        standby.stop()
        if operator.process is None:
            operator.start()
    wait_for_holder(kubectl, "muster-e2e")
    records = log_records(standby)
    assert any(record.get("message", "").startswith("leading as") for record in records)


@process_and_image
def test_a_stopped_leader_hands_the_lease_to_the_standby_within_its_retry_period(
    operator: OperatorProcess, kubectl: Kubectl
) -> None:
    wait_for_holder(kubectl, "muster-e2e")
    standby = replica(operator, "muster-e2e-standby")
    standby.start()
    try:
        leader = operator.process
        assert leader is not None
        signalled = time.time()
        operator.stop()  # SIGTERM, and wait for the process to end
        assert leader.returncode == 0
        handover = led_after(kubectl, "muster-e2e-standby", signalled)
        print(f"the standby led {handover:.1f}s after the leader was sent SIGTERM")
        assert handover < RETRY_PERIOD + HANDOVER_MARGIN
        wait_until("the standby to act as leader", lambda: leader_metric(standby) == 1)
    finally:
        standby.stop()
        if operator.process is None:
            operator.start()
    wait_for_holder(kubectl, "muster-e2e")


def test_a_replica_started_after_a_clean_stop_leads_at_once(
    operator: OperatorProcess, kubectl: Kubectl
) -> None:
    """As when the only replica is replaced: the new pod has a name of its own, and
    finds the Lease given up rather than held for another lease duration. Timed from
    its elector's first attempt, since how long the process takes to get there
    depends on the machine alone."""
    wait_for_holder(kubectl, "muster-e2e")
    operator.stop()
    replacement = replica(operator, "muster-e2e-replacement")
    try:
        released = lease_spec(kubectl)
        assert not released.get("holderIdentity"), released  # as client-go leaves it
        assert released["leaseDurationSeconds"] == 1
        replacement.start()
        trying = logged_at(replacement, "attempting to acquire the lease")
        took = led_after(kubectl, "muster-e2e-replacement", trying)
        print(f"the new replica led {took:.1f}s after its first attempt")
        assert took < RETRY_PERIOD + HANDOVER_MARGIN
    finally:
        replacement.stop()
        operator.start()
    wait_for_holder(kubectl, "muster-e2e")
