"""The last resort for a gang with device claims: each pod's node tried in turn.

Best fit pod by pod (`interplay`), with each shared claim tried on each node that
could hold it (`shared_claims`), is not exact for gangs of several shapes: which node
a pod takes first decides what the others find there (its cpu, its devices). When
those attempts fall short, the pods are assigned by a depth-first search: each pod,
in turn, on each node where it fits with its claims (kube-scheduler's allocator
decides the same, per node: `devices.ledger`), or left out while enough of the others
can still be placed; a branch that leads nowhere is undone. Pods of one shape are
interchangeable, so they take nodes in slot order only, and once one is left out
the rest of its shape are too.

The search stops after `STEPS` nodes tried in all, fewer on a large cluster (each try
reads every node, so at most `NODE_READS` node reads in all), and is not run for gangs
of more than `MAX_PODS` pods: exact for small gangs on small clusters (the unit tests
compare it with a brute force), bounded for any other, whatever its pods or claims,
so a tenant's many waiting gangs cannot slow the cycle beyond that per gang. It is run
only where no inter-pod rule ties the gang's pods to one another (then each pod's node
changes where the rules let the next one go, which best fit follows pod by pod).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from muster.scheduler.devices.gang import GangDevices
from muster.scheduler.devices.ledger import DeviceLedger
from muster.scheduler.placement.fit import BoolArray, Matrix, Shape

STEPS = 2048
NODE_READS = 1 << 17
MAX_PODS = 32
LEFT_OUT = 1 << 30  # a shape's next node once one of its pods was left out


@dataclass(slots=True)
class _Search:
    devices: GangDevices
    shapes: Sequence[Shape]
    within: BoolArray
    needed: int
    limit: int
    pods: list[tuple[int, str]]  # (shape index, pod name), in the order they are tried
    steps: int = STEPS
    found: dict[str, int] | None = field(default=None)

    def visit(
        self, at: int, free: Matrix, ledger: DeviceLedger, placed: dict[str, int], floor: list[int]
    ) -> bool:
        """Whether the pods from `at` on can complete `placed` to `needed` or more."""
        if at == len(self.pods) or len(placed) == self.limit:
            if len(placed) >= self.needed:
                self.found = dict(placed)
                return True
            return False
        index, pod = self.pods[at]
        shape = self.shapes[index]
        needs = self.devices.needs.get(pod, ())
        allowed = self.within & ledger.allowed(needs)
        copies = shape.copies(free, allowed)
        first = floor[index] + (1 if shape.one_per_node else 0)
        for slot in (int(slot) for slot in np.flatnonzero(copies) if slot >= first):
            self.steps -= 1
            if self.steps < 0:
                return False
            trial = ledger.copy()
            if not trial.take(needs, slot):
                continue
            work = free.copy()
            work[slot] -= shape.demand
            placed[pod] = slot
            if self.visit(at + 1, work, trial, placed, _at(floor, index, slot)):
                return True
            del placed[pod]
        if len(placed) + len(self.pods) - at - 1 < self.needed:
            return False  # too few left to leave this one out
        return self.visit(at + 1, free, ledger, placed, _at(floor, index, LEFT_OUT))


def _at(floor: list[int], index: int, slot: int) -> list[int]:
    """`floor` with the shape's next node at or after `slot`."""
    return [*floor[:index], slot, *floor[index + 1 :]]


def assign(
    devices: GangDevices,
    free: Matrix,
    shapes: Sequence[Shape],
    *,
    within: BoolArray,
    needed: int,
    limit: int,
) -> tuple[dict[str, int] | None, bool]:
    """Pod name -> node slot for `needed` to `limit` pods, or None when the search
    finds none within its bounds; and whether it searched everywhere (a None is then
    a proof that none exists)."""
    pods = [(index, pod) for index, shape in enumerate(shapes) for pod in shape.pods]
    if needed > limit:
        return None, True
    if len(pods) > MAX_PODS:
        return None, False
    steps = min(STEPS, NODE_READS // max(len(within), 1))
    search = _Search(devices, shapes, within, needed, limit, pods, steps)
    start = [-1] * len(shapes)
    search.visit(0, free.copy(), devices.ledger.copy(), {}, start)
    return search.found, search.steps >= 0
