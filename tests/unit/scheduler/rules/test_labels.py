"""Node labels as value-id columns over node slots, and label values read as integers."""

from __future__ import annotations

import pytest

from muster.scheduler.rules.labels import ABSENT, UNKNOWN_VALUE, LabelIndex, parse_int64

NAMES = ["a", None, "c"]  # slot 1 is dead
LABELS = [{"zone": "x", "size": "10"}, {}, {"zone": "y", "size": "big"}]


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("42", 42),
        ("-7", -7),
        ("+3", 3),
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", None),
        ("-9223372036854775808", -(2**63)),
        ("1.5", None),
        ("", None),
        (" 1", None),
        ("0x10", None),
    ],
)
def test_a_label_value_is_an_integer_as_go_parses_one(text: str, number: int | None) -> None:
    assert parse_int64(text) == number


def test_each_key_is_a_column_of_value_ids_absent_where_a_node_lacks_it() -> None:
    index = LabelIndex(NAMES, LABELS)
    zones = index.values_of("zone")
    assert zones.tolist() == [index.id_of("zone", "x"), ABSENT, index.id_of("zone", "y")]
    assert index.values_of("rack").tolist() == [ABSENT] * 3
    assert index.id_of("zone", "z") == UNKNOWN_VALUE
    assert index.ids_of("zone", ["y", "z", "x"]) == [index.id_of("zone", "y"), 0]


def test_integers_are_read_per_node_where_they_parse() -> None:
    numbers, parsed = LabelIndex(NAMES, LABELS).integers_of("size")
    assert parsed.tolist() == [True, False, False]
    assert int(numbers[0]) == 10


def test_node_names_are_ids_too_and_unknown_names_are_dropped() -> None:
    index = LabelIndex(NAMES, LABELS)
    ids = index.name_ids()
    assert ids[1] == ABSENT
    assert index.name_ids_of(["c", "nobody"]).tolist() == [ids[2]]
