"""What a cycle hands on: quiet groups stay quiet only while they do not change."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.scheduler.decisions.results import NOTHING_CARRIED, Carried

A, B, C = GroupKey("ns", "a"), GroupKey("ns", "b"), GroupKey("ns", "c")


def test_nothing_carried_leaves_nothing_quiet() -> None:
    assert NOTHING_CARRIED.still_quiet({A: 1}) == set()


def test_a_group_changed_since_is_no_longer_quiet() -> None:
    carried = Carried(quiet=frozenset({A, B}), as_of=5)
    changed = {A: 3, C: 4, B: 7}  # the state's counts, the most recent last
    assert carried.still_quiet(changed) == {A}


def test_changes_up_to_the_count_it_was_found_at_keep_it_quiet() -> None:
    carried = Carried(quiet=frozenset({A}), as_of=5)
    assert carried.still_quiet({A: 5}) == {A}
    assert carried.still_quiet({A: 6}) == set()


def test_the_count_is_bookkeeping_not_a_decision() -> None:
    assert Carried(quiet=frozenset({A}), as_of=1) == Carried(quiet=frozenset({A}), as_of=9)
