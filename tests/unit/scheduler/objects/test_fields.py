"""Fields of plain objects read with the field's name in every refusal, and the
values records share."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import pytest

from muster.api.keys import shared
from muster.scheduler.objects.fields import (
    IntakeError,
    canonical,
    integer_field,
    list_field,
    mapping_field,
    shared_json,
    shared_string_map,
    string_map,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, {}), ({"a": 1}, {"a": 1}), (OrderedDict(a=1), {"a": 1})],
)
def test_a_mapping_field_is_a_mapping_or_empty(value: object, expected: dict[str, int]) -> None:
    assert mapping_field(value, "spec") == expected


@pytest.mark.parametrize(
    ("read", "value", "problem"),
    [
        (mapping_field, [1], "spec.x must be a mapping"),
        (list_field, {"a": 1}, "spec.x must be a list"),
        (integer_field, "3", "spec.x must be an integer"),
        (integer_field, True, "spec.x must be an integer"),
        (string_map, "a=b", "spec.x must be a mapping"),
    ],
)
def test_a_field_of_the_wrong_kind_is_refused_by_name(
    read: Callable[[object, str], object], value: object, problem: str
) -> None:
    with pytest.raises(IntakeError) as refused:
        read(value, "spec.x")
    assert str(refused.value) == problem


def test_absent_lists_and_integers_are_empty_and_none() -> None:
    assert list_field(None, "x") == []
    assert integer_field(None, "x") is None
    assert integer_field(3, "x") == 3


def test_string_maps_hold_strings_and_equal_ones_are_one_object() -> None:
    assert string_map({"size": 3}, "labels") == {"size": "3"}
    first = shared_string_map({"app": "web"}, "labels")
    assert shared_string_map({"app": "web"}, "labels") is first


def test_shared_values_are_one_object_wherever_they_occur() -> None:
    assert shared("".join(["zo", "ne"])) is shared("zone")
    assert canonical((1, "".join(["a", "b"]))) is canonical((1, "ab"))
    copied = shared_json({"conditions": [{"type": "Ready", "count": 2}]})
    assert copied == {"conditions": [{"type": "Ready", "count": 2}]}
    assert copied["conditions"][0]["type"] is shared("Ready")
