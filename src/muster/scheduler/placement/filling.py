"""A gang that fell back to a wider domain fills it one narrower domain at a time.

A gang preferring one rack that no rack can take goes to one block; which of the
block's racks it uses decides what the next gangs find. Taken node by node, best fit
alone scatters it over whichever racks hold the fullest nodes, and each rack it
touches is lost to the next gang that wants a whole rack. Filled rack by rack -- the
racks with the most room for it first, so it touches as few as it can, and the rest
in the rack that holds that rest most tightly -- it leaves the other racks as they
were. This is the rule Kueue's topology-aware scheduling calls BestFit at each level
below the one chosen; the racks' order becomes a cost on the nodes, so best fit still
picks the nodes inside each rack.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from muster.scheduler.placement.fit import BoolArray, Counts, IntArray, Matrix, Shape, domain_counts


def fill_cost(
    free: Matrix,
    shapes: Sequence[Shape],
    within: BoolArray,
    *,
    inner: IntArray,
    inner_count: int,
    needed: int,
) -> Counts:
    """Per node, the place of its narrower domain (`inner`: each node's domain id, -1
    without the label) in the order the gang fills them; lower first, nodes of no
    narrower domain last."""
    node_room = np.zeros(inner.shape, dtype=np.int64)
    for shape in shapes:
        node_room += np.minimum(shape.copies(free, within), len(shape.pods))
    room = domain_counts(node_room, inner, inner_count)
    order = _filling_order(room, needed)
    rank = np.full(inner_count + 1, inner_count, dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return rank[np.where(inner >= 0, inner, inner_count)]


def _filling_order(room: Counts, needed: int) -> list[int]:
    """Domain ids with room: the roomiest first, until the rest fits one domain, then
    the tightest that holds the rest; the others after, roomiest first. Ties go to the
    lower id (the name that sorts first)."""
    waiting = sorted(np.flatnonzero(room > 0).tolist(), key=lambda domain: (-room[domain], domain))
    chosen: list[int] = []
    left = needed
    while waiting and left > 0:
        holding = [domain for domain in waiting if room[domain] >= left]
        pick = min(holding, key=lambda domain: (room[domain], domain)) if holding else waiting[0]
        waiting.remove(pick)
        chosen.append(pick)
        left -= int(room[pick])
    return chosen + waiting
