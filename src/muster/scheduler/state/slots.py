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
