"""The allocation of a pod's claims on one node: which devices each request gets.

kube-scheduler's allocator (`structured` in its source) tries, request after request,
every combination of the node's free devices that the request's selectors select
(of its first subrequest, then the next, for a `firstAvailable` list), and takes the
first with which every request of the pod's claims is satisfied,
`matchAttribute` constraints included: the devices of the requests a constraint names
(all the claim's when it names none) all have the attribute, with one value (the
attribute looked up by its qualified name, or by its bare name on a device of the
domain's driver). The search here is the same, by device numbers (`ledger`),
choosing a constraint's value first so that only devices with it are combined.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import numpy.typing as npt

from muster.scheduler.devices.intake import Request
from muster.scheduler.devices.selectors import DeviceKind, Value

BoolArray = npt.NDArray[np.bool_]
Group = tuple[int, int]  # a constraint: its claim's place among the pod's, its own
Typed = tuple[type, Value]  # an attribute's value, with its type (1 is not True)
Lookup = Callable[[int, str], Typed | None]  # device number, attribute -> value


@dataclass(frozen=True, slots=True)
class Wanted:
    """One request of the pod's claims: what may satisfy it, in order (its
    subrequests, or itself), each with the devices its selection selects; and the
    constraints that bind its devices (each with its attribute)."""

    options: tuple[tuple[Request, BoolArray], ...]  # matched: by device number
    binds: tuple[tuple[Group, str], ...] = ()


def attribute_of(kind: DeviceKind, name: str) -> Typed | None:
    """The device's value of a fully qualified attribute, as kube-scheduler looks it up."""
    attributes = dict(kind.attributes)
    found = attributes.get(name)
    if found is None:
        domain, _, bare = name.partition("/")
        found = attributes.get(bare) if domain == kind.driver else None
    return None if found is None else (type(found), found)


def choose(
    wanted: Sequence[Wanted],
    free: Sequence[int],
    lookup: Lookup,
    chosen: frozenset[int] = frozenset(),
    fixed: Mapping[Group, Typed] | None = None,
) -> list[tuple[int, ...]] | None:
    """Devices (by number) for the first request and, recursively, the others, one
    pick per request, or None when no combination satisfies them all."""
    if not wanted:
        return []
    first, rest = wanted[0], wanted[1:]
    for request, matched in first.options:  # a subrequest only if those before fail
        candidates = [number for number in free if matched[number] and number not in chosen]
        for pick, now in _picks(request, candidates, first.binds, dict(fixed or {}), lookup):
            found = choose(rest, free, lookup, chosen | frozenset(pick), now)
            if found is not None:
                return [pick, *found]
    return None


def _picks(
    request: Request,
    candidates: list[int],
    binds: tuple[tuple[Group, str], ...],
    fixed: dict[Group, Typed],
    lookup: Lookup,
) -> Iterator[tuple[tuple[int, ...], dict[Group, Typed]]]:
    """The request's possible picks among the candidates, under its constraints, each
    with the constraints' values it fixes."""
    if request.all_devices:
        if candidates and _agree(candidates, binds, fixed, lookup):
            yield tuple(candidates), fixed
        return
    if not binds:
        for pick in combinations(candidates, request.count):  # lazily
            yield pick, fixed
        return
    (group, attribute), others = binds[0], binds[1:]
    values = [lookup(number, attribute) for number in candidates]
    choices = [fixed[group]] if group in fixed else list(dict.fromkeys(v for v in values if v))
    for value in choices:
        kept = [number for number, found in zip(candidates, values, strict=True) if found == value]
        yield from _picks(request, kept, others, {**fixed, group: value}, lookup)


def _agree(
    numbers: list[int],
    binds: tuple[tuple[Group, str], ...],
    fixed: dict[Group, Typed],
    lookup: Lookup,
) -> bool:
    """Whether all these devices satisfy the constraints (and fix their values)."""
    for group, attribute in binds:
        values = {lookup(number, attribute) for number in numbers}
        value = next(iter(values))
        if len(values) != 1 or value is None or fixed.setdefault(group, value) != value:
            return False
    return True
