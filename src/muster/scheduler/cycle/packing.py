"""Gangs that all fit in one cycle are placed the largest first.

The queue decides who goes first when not everyone fits. When everyone the cycle
tried fits -- a burst of Jobs on a cluster with room -- the order decides only where
each goes, and placing them in the queue's order is placing them as they happened to
arrive: a small gang arriving first takes the corner of a rack a large one later needs
whole. The cycle is then decided again with the same gangs the largest first (first
fit decreasing, by each gang's dominant share of the cluster), and kept if it admits
every gang the first one did without taking anyone down, which leaves fewer racks and
nodes part-used. A scheduler that admits one gang at a time cannot do this; a cycle
sees the whole burst.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from muster.scheduler.cycle.queue import Gang
from muster.scheduler.decisions.results import CycleResult, GroupKey
from muster.scheduler.placement.fit import Matrix


def largest_first(
    gangs: Sequence[Gang], admitted: set[GroupKey], capacity: Matrix
) -> tuple[GroupKey, ...]:
    """The admitted gangs, the largest dominant share of the cluster first; ties in
    queue order (`gangs` is in queue order)."""
    totals = capacity.sum(axis=0).astype(np.float64)
    totals[totals <= 0] = np.inf
    chosen = [gang for gang in gangs if gang.key in admitted]
    shares = {gang.key: _dominant_share(gang, totals) for gang in chosen}
    ranked = sorted(range(len(chosen)), key=lambda index: (-shares[chosen[index].key], index))
    return tuple(chosen[index].key for index in ranked)


def _dominant_share(gang: Gang, totals: npt.NDArray[np.float64]) -> float:
    asked = np.zeros(totals.shape, dtype=np.float64)
    for entry in gang.pending:
        for column, amount in entry.demand:
            asked[column] += amount
    return float((asked / totals).max(initial=0.0))


def admits_as_many(packed: CycleResult, first: CycleResult) -> bool:
    """Whether the largest-first cycle admits every gang the first one did, taking
    nobody down."""
    admitted = {admission.group for admission in packed.admissions}
    return not any(admission.victims for admission in packed.admissions) and admitted >= {
        admission.group for admission in first.admissions
    }
