"""Gangs that all fit in one cycle may be placed the largest first.

The queue decides who goes first when not everyone fits. When everyone the cycle
tried fits -- a burst of Jobs on a cluster with room -- the order decides only where
each goes, and placing them in the queue's order is placing them as they happened to
arrive: a small gang arriving first takes the corner of a rack a large one later needs
whole. The cycle is then decided again with the same gangs the largest first (first
fit decreasing, by each gang's dominant share of the cluster), and that cycle is kept
if it admits every gang the first one did, takes nobody down, and leaves more of the
cluster whole (`whole_domains`); otherwise the queue's order stands. A scheduler that
admits one gang at a time cannot do this; a cycle sees the whole burst.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from muster.api.keys import GroupKey
from muster.scheduler.cycle.board import Board
from muster.scheduler.cycle.queue import Gang
from muster.scheduler.decisions.results import CycleResult
from muster.scheduler.placement.fit import Matrix, domain_counts


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


def better_packed(
    packed: CycleResult, packed_board: Board, first: CycleResult, board: Board
) -> bool:
    """Whether the largest-first cycle admits every gang the first one did, taking
    nobody down, and leaves more of the cluster whole."""
    admitted = {admission.group for admission in packed.admissions}
    return (
        not any(admission.victims for admission in packed.admissions)
        and admitted >= {admission.group for admission in first.admissions}
        and whole_domains(packed_board) > whole_domains(board)
    )


def whole_domains(board: Board) -> tuple[int, ...]:
    """What the board's placements leave whole: per topology level, widest first, the
    domains none of whose nodes holds anything, then such nodes. Only the scarce
    resources (GPUs, ...) count where there are any, so the small pods every node
    runs do not make every node part-used."""
    columns = list(board.order.scarce_columns) or list(range(board.free.shape[1]))
    used = (board.free[:, columns] != board.capacity[:, columns]).any(axis=1).astype(np.int64)
    whole = []
    for key in board.levels:
        values = board.table.labels.values_of(key)
        count = int(values.max(initial=-1)) + 1
        nodes = domain_counts(np.ones_like(used), values, count)
        whole.append(int(((nodes > 0) & (domain_counts(used, values, count) == 0)).sum()))
    whole.append(int((used == 0).sum()))
    return tuple(whole)
