"""Row numbers of the state's growable arrays, and the small sets its indexes keep."""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from typing import Any, TypeVar


class Slots:
    """Reusable row numbers for growable arrays; the lowest free row is reused first."""

    def __init__(self) -> None:
        self.size = 0
        self._free: list[int] = []

    def take(self) -> int:
        if self._free:
            return heapq.heappop(self._free)
        self.size += 1
        return self.size - 1

    def give_back(self, slot: int) -> None:
        heapq.heappush(self._free, slot)

    def copy(self) -> Slots:
        twin = Slots()
        twin.size, twin._free = self.size, list(self._free)
        return twin


_Member = TypeVar("_Member", bound=Hashable)
Few = dict[_Member, None]
"""A small set kept as the keys of a dict: the members of each of thousands of gangs
and the pods on each node. A set of 8 names takes 728 B, a dict of them 272."""


def copied_sets(index: dict[Any, Few[Any]]) -> dict[Any, Few[Any]]:
    return {key: dict(members) for key, members in index.items()}


def copied(value: Any) -> Any:
    """A copy of one attribute of the state that a what-if may change without touching
    the original: containers of containers two levels deep (indexes of members, of
    ports), arrays and containers whole, objects by their own `copy`, values as they
    are (frozen records, numbers)."""
    if isinstance(value, dict):
        nested = any(isinstance(item, dict) for item in value.values())
        return copied_sets(value) if nested else dict(value)
    if isinstance(value, set | list):
        return type(value)(value)
    copy = getattr(value, "copy", None)
    return copy() if callable(copy) else value
