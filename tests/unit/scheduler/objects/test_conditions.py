from __future__ import annotations

from typing import Any

from muster.scheduler.objects.conditions import admitted, condition, is_true


def _status(*conditions: Any) -> dict[str, Any]:
    return {"conditions": list(conditions)}


def test_condition_finds_its_type_and_skips_malformed_entries() -> None:
    ready = {"type": "Ready", "status": "True"}
    assert condition(_status("junk", ready), "Ready") is ready
    assert condition(_status(ready), "PodScheduled") is None
    assert condition({}, "Ready") is None


def test_is_true_only_for_a_true_condition() -> None:
    assert is_true(_status({"type": "Ready", "status": "True"}), "Ready")
    assert not is_true(_status({"type": "Ready", "status": "Unknown"}), "Ready")
    assert not is_true({}, "Ready")


def test_admitted_reads_pod_group_scheduled() -> None:
    assert admitted(_status({"type": "PodGroupScheduled", "status": "True"}))
    assert not admitted(_status({"type": "PodGroupScheduled", "status": "False"}))
    assert not admitted(_status({"type": "PodGroupInitiallyScheduled", "status": "True"}))
