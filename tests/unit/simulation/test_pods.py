from __future__ import annotations

from typing import Any

from muster.api.constants import GANG_GATE, POD_GROUP_LABEL
from muster.simulation.pods import (
    bound,
    gated,
    is_finished,
    is_pending,
    remade_by_job,
)

OTHER_GATE = {"name": "example.com/other"}


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "train-0",
            "namespace": "ml",
            "labels": {POD_GROUP_LABEL: "train"},
            "ownerReferences": [{"kind": "Job", "name": "train", "controller": True}],
        },
        "spec": spec,
    }


def test_bound_lifts_only_the_gang_gate_and_sets_the_node() -> None:
    original = pod(schedulingGates=[{"name": GANG_GATE}, OTHER_GATE])
    result = bound(original, "n1")
    assert result["spec"] == {"schedulingGates": [OTHER_GATE], "nodeName": "n1"}
    assert "nodeName" not in original["spec"]


def test_bound_drops_an_empty_gate_list() -> None:
    assert bound(pod(schedulingGates=[{"name": GANG_GATE}]), "n1")["spec"] == {"nodeName": "n1"}


def test_gated_adds_the_gate_once() -> None:
    once = gated(pod(schedulingGates=[OTHER_GATE]))
    assert once["spec"]["schedulingGates"] == [OTHER_GATE, {"name": GANG_GATE}]
    assert gated(once) == once


def test_remade_by_job_is_the_same_pod_pending_again() -> None:
    result = remade_by_job({**pod(nodeName="n1"), "status": {"phase": "Running"}})
    assert result["metadata"]["name"] == "train-0"
    assert "nodeName" not in result["spec"]
    assert result["status"] == {"phase": "Pending"}
    assert is_pending(result)


def test_pending_and_finished() -> None:
    assert is_pending(pod())
    assert not is_pending(pod(nodeName="n1"))
    done = {**pod(), "status": {"phase": "Succeeded"}}
    assert is_finished(done)
    assert not is_pending(done)
