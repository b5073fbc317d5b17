"""A gang placed pod by pod that fell short, placed again other ways.

In turn: in each domain of an open self-affinity (its first pod decides the domain),
with each node for the claims its pods share (`shared_claims`), and, for a gang with
claims and no inter-pod rule among its pods, by a bounded depth-first search
(`exhaustive`). A gang of several shapes the search could not finish within its
bounds is marked `unsure` on its rules: a placement may exist that none of these
found, so it is not told that it does not fit even on an empty cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from muster.scheduler.devices.gang import GangDevices
from muster.scheduler.placement.exhaustive import assign
from muster.scheduler.placement.fit import BoolArray, Matrix, NodeOrder, Shape
from muster.scheduler.placement.interpod_view import Member
from muster.scheduler.placement.shared_claims import Pins, pin_choices


class Retried(Protocol):
    """What the retries use of a gang placed pod by pod (`interplay.GangInterplay`),
    named here so that the retries need not import the module that calls them."""

    members: list[Member]
    devices: GangDevices | None
    unsure: bool

    def open_domains(
        self, free: Matrix, shapes: Sequence[Shape], *, within: BoolArray
    ) -> list[BoolArray]: ...

    def place_once(
        self,
        free: Matrix,
        shapes: Sequence[Shape],
        within: BoolArray,
        order: NodeOrder,
        limit: int,
        *,
        pins: Pins | None = None,
    ) -> dict[str, int]: ...


def retried(
    interplay: Retried,
    best: dict[str, int],
    free: Matrix,
    shapes: Sequence[Shape],
    *,
    within: BoolArray,
    order: NodeOrder,
    needed: int,
    limit: int,
) -> dict[str, int]:
    """The first placement of `needed` or more pods found, else the largest partial
    one (`best`: the first attempt's)."""
    tries: list[tuple[BoolArray, Pins | None]] = [
        (domain, None) for domain in interplay.open_domains(free, shapes, within=within)
    ]
    devices = interplay.devices
    if devices is not None:
        choices = pin_choices(devices, free, shapes, within=within, order=order)
        tries += [(within, pins) for pins in choices]
    for nodes, pins in tries:
        attempt = interplay.place_once(free, shapes, nodes, order, limit, pins=pins)
        if len(attempt) >= needed:
            return attempt
        best = attempt if len(attempt) > len(best) else best
    if devices is None or any(member.rules for member in interplay.members):
        return best
    found, finished = assign(devices, free, shapes, within=within, needed=needed, limit=limit)
    if found is not None:
        return found
    interplay.unsure = interplay.unsure or (len(shapes) > 1 and not finished)
    return best
