"""`muster simulate --timeline` over a dump of the live cluster tells the operator's own
estimate: runtimes are read by the same code, pod by pod, so an expected runtime
declared on a Job's pod template (not on the Job) counts in both."""

from __future__ import annotations

import json
from typing import Any

from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import POD_GROUPS, WORKLOADS, group_status, muster, wait_all_bound

EXPECTED_RUNTIME = "scheduling.muster.dev/expected-runtime"


def test_a_pod_templates_runtime_gives_the_same_start_live_and_simulated(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str, pool: NodePool
) -> None:
    pool.add(4)
    first = gang_job("first", pool, workers=4)
    first["spec"]["template"]["metadata"]["annotations"][EXPECTED_RUNTIME] = "45m"
    kubectl.apply(first, namespace)
    wait_all_bound(kubectl, namespace, "first", 4)
    kubectl.apply(gang_job("second", pool, workers=4), namespace)
    wait_until(
        "the operator's estimate for second",
        lambda: "estimatedStartTime" in group_status(kubectl, namespace, "second"),
    )
    live = group_status(kubectl, namespace, "second")["estimatedStartTime"]

    dump = kubectl(
        "get", f"nodes,pods,{POD_GROUPS},{WORKLOADS},jobs,priorityclasses", "-A", "-o", "yaml"
    ).stdout
    timeline = json.loads(muster("simulate", "-", "--timeline", "-o", "json", stdin=dump))
    entries: dict[str, dict[str, Any]] = {
        entry["name"]: entry for entry in timeline["timeline"] if entry["namespace"] == namespace
    }
    assert (entries["first"]["running"], entries["first"]["end"]) == (True, live)
    assert (entries["first"]["runtime"], entries["first"]["basis"]) == (2700, "declared")
    assert entries["second"]["start"] == live
