"""A gang placed pod by pod under its rules, and, falling short, placed again other ways.

In turn: in each domain of an open self-affinity (its first pod decides the domain),
with each node for the claims its pods share (`shared_claims`), and, for a gang with
claims and no inter-pod rule among its pods, by a bounded depth-first search
(`exhaustive`). A gang of several shapes the search could not finish within its
bounds is marked `unsure` on its rules: a placement may exist that none of these
found, so it is not told that it does not fit even on an empty cluster.
"""

from __future__ import annotations

from muster.scheduler.placement.exhaustive import assign
from muster.scheduler.placement.fit import BoolArray
from muster.scheduler.placement.interplay import GangInterplay
from muster.scheduler.placement.request import FitRequest
from muster.scheduler.placement.shared_claims import Pins, pin_choices


def pod_by_pod(interplay: GangInterplay, request: FitRequest) -> dict[str, int]:
    """Pod name -> node slot for as many members as fit (up to the request's limit),
    placed one by one under the rules; may hold fewer than `needed`. `shapes` are the
    members' shapes, in the order the members were given to `interplay`."""
    best = interplay.place_once(
        request.free, request.shapes, request.within, request.order, request.cap
    )
    if len(best) >= request.needed:
        return best
    return _retried(interplay, best, request)


def _retried(interplay: GangInterplay, best: dict[str, int], request: FitRequest) -> dict[str, int]:
    """The first placement of `needed` or more pods found, else the largest partial
    one (`best`: the first attempt's)."""
    free, shapes, within, order = request.free, request.shapes, request.within, request.order
    needed, limit = request.needed, request.cap
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
