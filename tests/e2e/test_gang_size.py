"""The largest gang Muster admits keeps a status that etcd stores.

The status writer keeps a gang's whole plan (pod name to node name) in its
PodGroup's status, beside its conditions and refusals. At MAX_GANG_SIZE pods with
the longest names Kubernetes allows (63-character pods, 253-character nodes) and a
full refusal memory, that status is written and read back whole; past the limit, the
API server refuses the PodGroup at admission instead of failing its status later.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from devtools.kubectl import Kubectl

from muster.api.constants import MAX_GANG_SIZE, MAX_REFUSAL_MESSAGE, MAX_REFUSED_NODES
from tests.e2e.support.harness import POD_GROUPS, install_crds

pytestmark = pytest.mark.e2e

LONGEST_POD_NAME = 63
LONGEST_NODE_NAME = 253


def name(index: int, length: int) -> str:
    return f"{index:0{length}d}"


def largest_status() -> dict[str, object]:
    """A status as large as the writer can make it for the largest gang."""
    now = "2026-01-01T00:00:00Z"
    condition = {"status": "True", "reason": "Scheduled", "lastTransitionTime": now}
    refused = [
        {
            "node": name(index, LONGEST_NODE_NAME),
            "pod": name(index, LONGEST_POD_NAME),
            "message": "x" * MAX_REFUSAL_MESSAGE,
            "count": 1,
        }
        for index in range(MAX_REFUSED_NODES)
    ]
    return {
        "conditions": [
            {**condition, "type": kind, "message": "m" * 1024}
            for kind in ("PodGroupScheduled", "PodGroupInitiallyScheduled", "DisruptionTarget")
        ],
        "observedGeneration": 1,
        "minCount": MAX_GANG_SIZE,
        "pods": {"total": MAX_GANG_SIZE, "gated": MAX_GANG_SIZE},
        "plan": {
            name(index, LONGEST_POD_NAME): name(index, LONGEST_NODE_NAME)
            for index in range(MAX_GANG_SIZE)
        },
        "admittedAt": now,
        "refusals": {"nodeSet": "d" * 64, "rollbacks": 1, "nodes": refused},
    }


def test_the_status_of_the_largest_gang_fits(
    kubectl: Kubectl, namespace: str, tmp_path: Path
) -> None:
    install_crds(kubectl)
    group: dict[str, Any] = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "largest"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": MAX_GANG_SIZE}}},
    }
    kubectl.apply(group, namespace)
    status = largest_status()
    patch = tmp_path / "status.json"
    patch.write_text(json.dumps([{"op": "add", "path": "/status", "value": status}]))
    # The stored object as the patch left it: the operator, which runs beside the test,
    # may write its own status for this PodGroup (it has no pods) right after.
    stored = kubectl.json(
        "patch", POD_GROUPS, "largest", "-n", namespace, "--subresource=status",
        "--type=json", f"--patch-file={patch}",
    )  # fmt: skip
    assert stored["status"]["plan"] == status["plan"]
    assert len(json.dumps(stored).encode()) < 1.5 * 1024 * 1024

    group["metadata"]["name"] = "too-large"
    group["spec"] = {"schedulingPolicy": {"gang": {"minCount": MAX_GANG_SIZE + 1}}}
    refused = kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(group), check=False)
    assert refused.returncode != 0
    assert f"gang.minCount must be at most {MAX_GANG_SIZE}" in refused.stderr
