"""Two replicas: one leads through the Lease, the other takes over when it dies."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.cluster import Kubectl, wait_until
from tests.e2e.harness import LEASE, NodePool, OperatorProcess, gang_job, wait_all_bound

pytestmark = pytest.mark.e2e


def holder(kubectl: Kubectl) -> str | None:
    found = kubectl("get", *LEASE, "-o", "jsonpath={.spec.holderIdentity}", check=False)
    return found.stdout or None


def leader_metric(process: OperatorProcess) -> float:
    line = next(
        line for line in process.metrics().splitlines() if line.startswith("muster_leader ")
    )
    return float(line.split()[1])


def test_a_standby_takes_over_when_the_leader_is_killed(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    standby = operator.replica("muster-e2e-standby", "--log-format=json")
    standby.start()
    try:
        assert holder(kubectl) == "muster-e2e"
        assert leader_metric(operator) == 1
        assert leader_metric(standby) == 0

        operator.kill()
        killed = time.monotonic()
        wait_until(
            "the standby to hold the Lease",
            lambda: holder(kubectl) == "muster-e2e-standby",
            timeout=30,
        )
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
    wait_until("the first replica to lead again", lambda: holder(kubectl) == "muster-e2e")
    records = [
        json.loads(line)
        for line in standby.log_path.read_text().splitlines()
        if line.startswith("{")
    ]
    assert any(record.get("message", "").startswith("leading as") for record in records)
