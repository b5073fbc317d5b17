"""The models' shared spelling: camelCase on the wire, snake_case in Python, unknown
fields refused, and metadata the API server adds kept through a round trip."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from muster.api.base import Condition, KubeModel, ObjectMeta


class Sample(KubeModel):
    min_count: int
    topology_key: str | None = None


def test_fields_are_camel_case_on_the_wire_and_unset_ones_left_out() -> None:
    sample = Sample.from_manifest({"minCount": 3})
    assert sample.min_count == 3
    assert sample.to_manifest() == {"minCount": 3}
    assert Sample(min_count=1, topology_key="zone").to_manifest() == {
        "minCount": 1,
        "topologyKey": "zone",
    }


def test_an_unknown_field_is_an_error_and_models_are_frozen() -> None:
    with pytest.raises(ValidationError, match="minCont"):
        Sample.from_manifest({"minCount": 1, "minCont": 2})
    with pytest.raises(ValidationError):
        Sample(min_count=1).min_count = 2  # type: ignore[misc]


def test_metadata_keeps_what_it_does_not_type() -> None:
    raw = {"name": "train", "uid": "u-1", "managedFields": [{"manager": "kubectl"}]}
    meta = ObjectMeta.model_validate(raw)
    assert meta.name == "train"
    assert meta.model_dump(by_alias=True, exclude_none=True) == raw


def test_a_condition_needs_an_aware_time_and_a_known_status() -> None:
    written = {
        "type": "PodGroupScheduled",
        "status": "True",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "Scheduled",
        "message": "",
    }
    condition = Condition.from_manifest(written)
    assert condition.last_transition_time == datetime(2026, 1, 1, tzinfo=UTC)
    assert condition.to_manifest() == written
    for wrong in ({"status": "Maybe"}, {"lastTransitionTime": "2026-01-01T00:00:00"}):
        with pytest.raises(ValidationError):
            Condition.from_manifest({**written, **wrong})
