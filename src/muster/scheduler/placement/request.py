"""What placing a gang reads, in one frozen value.

Every way of placing a gang (best fit, pod by pod under inter-pod rules, slice by
slice; anywhere, in one domain, at a preferred level) reads the same things: what is
free, the gang's shapes, the nodes it may use, the order to fill them in, how many
pods it needs and at most how many to place, and the rules that tie its pods
together. They travel together as a `FitRequest`; a step that narrows one of them
(a domain's nodes, preemption's costs) makes a changed copy (`dataclasses.replace`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from muster.scheduler.placement.fit import BoolArray, Counts, Matrix, NodeOrder, Shape
from muster.scheduler.placement.interplay import GangInterplay
from muster.scheduler.placement.slicing import Slicing


@dataclass(frozen=True, slots=True, eq=False)
class FitRequest:
    """A gang's pods to place on `free` within `within`, best fit in `order`.

    `needed`: how many must fit for the placement to count (the caller judges a
    shorter one); `limit`: at most this many are placed (None: every member);
    `largest`: the biggest node's allocatable, which sizes the shapes; `interplay`:
    the inter-pod rules and device claims tying the pods together (None: none);
    `slicing`: the gang's slices (None: none); `head_start` (preemption): what is
    free before any victim leaves, so domains needing fewer victims come first.
    """

    free: Matrix
    shapes: Sequence[Shape]
    within: BoolArray
    order: NodeOrder
    largest: Counts
    needed: int
    limit: int | None = None
    interplay: GangInterplay | None = None
    slicing: Slicing | None = None
    head_start: Matrix | None = None

    @property
    def cap(self) -> int:
        """At most how many pods are placed: `limit`, else every member."""
        return sum(len(shape.pods) for shape in self.shapes) if self.limit is None else self.limit
