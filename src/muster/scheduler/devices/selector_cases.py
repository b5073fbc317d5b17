"""Which selector cases a claim needs judged, and what their judgements mean for it.

kube-scheduler's allocator (`structured`, `selectorsMatch`) evaluates, on each
device, the selectors of the request's DeviceClass and then the request's own, in
order, and stops at the first that does not select it; an evaluation that fails
(its cost limit exceeded among them) fails the allocation of the claim, with an
error that names the class or the claim and the selector's place
(`class %s: selector #%d: CEL runtime error`). The cases a request needs are found
the same way (`walk`): the first expression on every kind of device, the next only
on the kinds the ones before selected. A case judged over budget makes the claim
wait with that reason; a case not judged yet makes it wait for its judgement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from muster.scheduler.devices.intake import Request
from muster.scheduler.devices.selector_cost import API_SERVER_COST_LIMIT, COST_LIMIT
from muster.scheduler.devices.selectors import (
    TIME_BUDGET,
    Case,
    DeviceKind,
    Judgement,
    case_of,
)

OVER_COST = (
    "{owner}: selector #{index}: CEL cost limit of {limit} exceeded "
    "(Muster's limit; kube-scheduler's is {upstream})"
)
OVER_TIME = "{owner}: selector #{index}: CEL evaluation did not end within {seconds:g}s"
UNCOMPILED = "{owner}: selector #{index}: a CEL expression Muster cannot parse"
NOT_JUDGED = "waiting for the CEL selectors of {owner} to be evaluated"


@dataclass(frozen=True, slots=True)
class Walked:
    """How far the judgements go for one selection: every case needed is judged
    (neither field set), or it stopped at an expression over budget (its place and
    judgement), or at cases not judged yet."""

    over: tuple[int, Judgement] | None = None
    missing: tuple[Case, ...] = ()


def walk(
    expressions: tuple[str, ...], kinds: Iterable[DeviceKind], judged: Mapping[Case, Judgement]
) -> Walked:
    """Follow the expressions in kube-scheduler's order over the kinds of device."""
    remaining = list(kinds)
    for index, expression in enumerate(expressions):
        cases = [case_of(expression, kind) for kind in remaining]
        found = [judged.get(case) for case in cases]
        for judgement in found:
            if judgement is not None and judgement.stops:
                return Walked(over=(index, judgement))
        missing = tuple(dict.fromkeys(c for c, j in zip(cases, found, strict=True) if j is None))
        if missing:
            return Walked(missing=missing)
        remaining = [
            kind
            for kind, judgement in zip(remaining, found, strict=True)
            if judgement is Judgement.SELECTS
        ]
    return Walked()


def selections(
    requests: Iterable[Request], classes: Mapping[str, tuple[str, ...]]
) -> Iterable[tuple[tuple[str, ...], str, int]]:
    """Each selection the requests may be allocated by (their subrequests'), with its
    class and how many of its expressions are the class's; requests of an unknown
    class select nothing, and need no judgement."""
    for request in requests:
        for option in request.options:
            selectors = classes.get(option.class_name)
            if selectors is not None:
                yield (*selectors, *option.selectors), option.class_name, len(selectors)


def problem(
    owner: str,
    requests: Iterable[Request],
    classes: Mapping[str, tuple[str, ...]],
    kinds: tuple[DeviceKind, ...],
    judged: Mapping[Case, Judgement],
) -> str | None:
    """Why a claim (named by `owner`) cannot be allocated yet, as far as its selectors
    tell: one over budget or unparsable, or some not judged; None when every case it
    needs is."""
    for expressions, class_name, of_class in selections(requests, classes):
        walked = walk(expressions, kinds, judged)
        if walked.over is not None:
            index, judgement = walked.over
            where = owner if index >= of_class else f"deviceclass {class_name}"
            place = index - of_class if index >= of_class else index
            if judgement is Judgement.OVER_TIME:
                return OVER_TIME.format(owner=where, index=place, seconds=TIME_BUDGET)
            if judgement is Judgement.UNCOMPILED:
                return UNCOMPILED.format(owner=where, index=place)
            return OVER_COST.format(
                owner=where, index=place, limit=COST_LIMIT, upstream=API_SERVER_COST_LIMIT
            )
        if walked.missing:
            return NOT_JUDGED.format(owner=owner)
    return None


def unjudged(
    requests: Iterable[Request],
    classes: Mapping[str, tuple[str, ...]],
    kinds: tuple[DeviceKind, ...],
    judged: Mapping[Case, Judgement],
) -> list[Case]:
    """The cases to judge next for these requests (those of one expression per
    selection: the next are known once these are judged)."""
    wanted: dict[Case, None] = {}
    done: set[tuple[str, ...]] = set()
    for expressions, _, _ in selections(requests, classes):
        if expressions not in done:
            done.add(expressions)
            wanted.update(dict.fromkeys(walk(expressions, kinds, judged).missing))
    return list(wanted)
