"""A Job stored without the native field its template was gated for is recorded, so
its pods are let go; every other Job is not."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.constants import POD_GROUP_LABEL
from muster.api.keys import GroupKey, JobRef
from muster.scheduler.memory.dropped_field import DroppedField, dropped_field, gated_for_field
from tests.unit.scheduler.builders import Obj, job

GANG = {"schedulingPolicy": {"gang": {"minCount": 2}}}


def without(obj: Obj, *path: str) -> Obj:
    *parents, last = path
    inner: Any = obj
    for part in parents:
        inner = inner[part]
    del inner[last]
    return obj


def test_a_marked_job_stored_without_its_field_is_recorded() -> None:
    stored = job("train", namespace="team")
    assert gated_for_field(stored)
    assert dropped_field(stored) == DroppedField(
        JobRef("team", "train", "train-uid"), GroupKey("team", "train")
    )


@pytest.mark.parametrize(
    "stored",
    [
        pytest.param(job("train", scheduling=GANG), id="field kept"),
        pytest.param(job("train", labels={"scheduling.muster.dev/policy": "gang"}), id="label"),
        pytest.param(job("train", gated_for_field=False), id="gated by hand"),
        pytest.param(
            without(job("train"), "spec", "template", "metadata", "labels", POD_GROUP_LABEL),
            id="no group label",
        ),
        pytest.param(without(job("train"), "metadata", "uid"), id="no uid"),
        pytest.param({"spec": "junk"}, id="malformed"),
    ],
)
def test_every_other_job_has_no_record(stored: Obj) -> None:
    assert dropped_field(stored) is None
