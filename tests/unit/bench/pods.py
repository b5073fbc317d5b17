"""Pod objects as watch events carry them, reduced to what the benchmark reads."""

from __future__ import annotations

from typing import Any

from bench.e2e.workload import JOB_NAME_LABEL

from muster.api.constants import GANG_GATE


def pod(
    job: str,
    name: str,
    *,
    node: str | None = None,
    phase: str = "Pending",
    unschedulable: bool = False,
    gated: bool = False,
    gate: str = GANG_GATE,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node:
        spec["nodeName"] = node
    if gated:
        spec["schedulingGates"] = [{"name": gate}]
    conditions = (
        [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
        if unschedulable
        else []
    )
    return {
        "metadata": {"name": name, "labels": {JOB_NAME_LABEL: job}},
        "spec": spec,
        "status": {"phase": phase, "conditions": conditions},
    }
