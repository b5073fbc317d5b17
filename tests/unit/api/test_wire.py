from __future__ import annotations

from typing import Any

from muster.api.wire import controller_name


def _owned(*owners: Any) -> dict[str, Any]:
    return {"metadata": {"ownerReferences": list(owners)}}


def test_controller_name_is_the_controlling_owner_of_that_kind() -> None:
    job = {"kind": "Job", "name": "train", "controller": True}
    assert controller_name(_owned("junk", job), "Job") == "train"
    assert controller_name(_owned(job), "CronJob") is None


def test_an_owner_that_does_not_control_is_no_controller() -> None:
    assert controller_name(_owned({"kind": "Job", "name": "train"}), "Job") is None
    assert controller_name({"metadata": {}}, "Job") is None
    assert controller_name({}, "Job") is None
