"""A gang's slices: every N consecutive members of it, cut by completion index or name.

A gang with slices (its PodGroup's topology-slice annotations) has its members cut
into slices of `size`: by completion index where every member has one (slice
`index // size`, so a replaced pod rejoins its slice), else by rank in name order.
Where each slice is placed is `slices`' job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from muster.scheduler.placement.fit import Counts, IntArray


@dataclass(frozen=True, slots=True)
class Slicing:
    """A gang's slices: the level and size, each node's slice domain (-1: none) and
    the domains' names, the pending members of each slice in slice order, and each
    slice's domain when members of it are placed already (-1: free to choose)."""

    key: str
    size: int
    values: IntArray
    names: tuple[str, ...]
    groups: tuple[tuple[str, ...], ...]
    anchors: tuple[int, ...]
    name_rank: IntArray  # each domain's rank in name order, for ties

    def whole_slices(self, room: Counts, outer: IntArray, count: int) -> Counts:
        """Per domain id of `outer` (each node's, -1: none), how many whole slices
        its slice domains hold, given each node's `room` in pods."""
        inside = (outer >= 0) & (self.values >= 0)
        width = len(self.names)
        codes = outer[inside].astype(np.int64) * width + self.values[inside]
        pairs, of_node = np.unique(codes, return_inverse=True)  # (outer, slice) pairs met
        room_per_pair = np.bincount(of_node, weights=room[inside], minlength=len(pairs))
        slices = room_per_pair.astype(np.int64) // self.size
        whole: Counts = np.bincount(pairs // width, weights=slices, minlength=count).astype(
            np.int64
        )
        return whole


@dataclass(frozen=True, slots=True)
class SliceMember:
    """A live member of a sliced gang: its name, completion index, and the node slot it
    takes capacity on (None: pending)."""

    name: str
    index: int | None
    slot: int | None


def slicing_of(
    key: str, size: int, values: IntArray, names: tuple[str, ...], members: Sequence[SliceMember]
) -> Slicing:
    """The gang's slices over the domains of its slice level (`values`, `names`): the
    pending members of each, and the domain its placed members are in (the first
    found by name, if they disagree)."""
    ids = slice_ids([(member.name, member.index) for member in members], size)
    groups: dict[int, list[str]] = {}
    anchors: dict[int, int] = {}
    for member in sorted(members, key=lambda member: member.name):
        slice_id = ids[member.name]
        if member.slot is None:
            groups.setdefault(slice_id, []).append(member.name)
        elif values[member.slot] >= 0:
            anchors.setdefault(slice_id, int(values[member.slot]))
    order = sorted(groups)
    name_rank = np.empty(len(names), dtype=np.int32)
    name_rank[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    return Slicing(
        key,
        size,
        values,
        names,
        tuple(tuple(groups[slice_id]) for slice_id in order),
        tuple(anchors.get(slice_id, -1) for slice_id in order),
        name_rank,
    )


def slice_ids(members: Sequence[tuple[str, int | None]], size: int) -> dict[str, int]:
    """Each member's slice: its completion index // size where every member has one,
    else its rank by name // size."""
    if members and all(index is not None for _, index in members):
        return {name: int(index) // size for name, index in members if index is not None}
    ranked = sorted(name for name, _ in members)
    return {name: rank // size for rank, name in enumerate(ranked)}
