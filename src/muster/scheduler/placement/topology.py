"""Choosing where a gang goes: anywhere, or inside one domain of a topology key.

With a topology key every placed pod must share the node label's value, and nodes
without the label are out. Domains are compared at once with per-domain sums of
`copies_per_node`, which bound what each domain can take (exactly, for one shape).
Among the domains that can take the gang, the fullest one is tried first (the fewest
member copies fit in it): the emptier domains stay whole for larger gangs behind.
The domains are those of one key (`Domains.of`) or, for a preferred level, those of
its key cut by the required one (`levels.level_domains`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from muster.scheduler.decisions.results import DomainFit
from muster.scheduler.placement.filling import fill_cost
from muster.scheduler.placement.fit import Counts, domain_counts, upper_bound
from muster.scheduler.placement.place import place
from muster.scheduler.placement.request import FitRequest
from muster.scheduler.rules.labels import LabelIndex

BoolArray = npt.NDArray[np.bool_]

WHOLE_CLUSTER = "cluster"


@dataclass(frozen=True, slots=True)
class GangPlacement:
    """Where the gang's pods go (pod name -> node slot), or how close it came."""

    placements: dict[str, int]  # empty unless at least `needed` pods fit
    domain: str | None  # the label value chosen, with a topology key
    fits: tuple[DomainFit, ...]  # per domain, by name, when the gang does not fit
    best_fit: int
    key: str | None = None  # the label key of `domain`
    passed_over: tuple[str, ...] = ()  # why not the narrower preferred levels, in words

    @property
    def chosen_domain(self) -> tuple[str, str] | None:
        """The (key, value) of the domain the gang was placed in, if it was kept in one."""
        if self.key is None or self.domain is None:
            return None
        return (self.key, self.domain)


def fit_anywhere(request: FitRequest, *, inner: Domains | None = None) -> GangPlacement:
    """The gang wherever `request.within` allows (`inner`: the narrower domains to fill
    one at a time, `filling`)."""
    needed = request.needed
    bound = upper_bound(request.free, request.shapes, request.within)
    if bound < needed:
        return GangPlacement({}, None, (DomainFit(WHOLE_CLUSTER, bound),), bound)
    placed = place(_filling(request, inner=inner))
    fits = len(placed)
    return GangPlacement(
        placed if fits >= needed else {}, None, (DomainFit(WHOLE_CLUSTER, fits),), fits
    )


def _filling(request: FitRequest, *, inner: Domains | None) -> FitRequest:
    """The request with the node order that fills `inner`'s domains one at a time; an
    order that has a cost already (preemption's: nodes with fewer victims first) keeps
    it."""
    order = request.order
    if inner is None or order.cost is not None:
        return request
    cost = fill_cost(
        request.free,
        request.shapes,
        request.within,
        inner=inner.values,
        inner_count=len(inner.names),
        needed=request.needed,
    )
    return replace(request, order=order.with_cost(cost))


@dataclass(frozen=True, slots=True)
class Domains:
    """The domains a gang may be kept in: each node's domain id (-1: none), and
    each id's name (ties between equally full domains go to the smaller name)."""

    key: str
    values: npt.NDArray[np.int32]
    names: tuple[str, ...]

    @staticmethod
    def of(labels: LabelIndex, key: str) -> Domains:
        """One domain per value of the label `key`."""
        vocabulary = labels.vocabulary(key)
        names = sorted(vocabulary, key=lambda value: vocabulary[value])
        return Domains(key, labels.values_of(key), tuple(names))


def fit_in_one(
    request: FitRequest, domains: Domains, *, inner: Domains | None = None
) -> GangPlacement:
    """The gang in one of the domains, the fullest that takes it (best fit: the
    fewest member copies fit in it, so emptier domains stay whole; with slices, the
    fewest whole slices first, as Kueue's BestFit counts them). With `inner`, the
    narrower domains a gang passed over, the chosen domain is filled one of them at a
    time (`filling`).

    With `request.head_start` (preemption: what is free before any victim leaves),
    domains where more of the gang fits on that capacity come first, as they need
    fewer victims; fullness only breaks ties.
    """
    values, names, needed = domains.values, domains.names, request.needed
    labelled = request.within & (values >= 0)
    bound, room, ahead, whole = _tally(request, labelled, domains)
    candidates = sorted(
        (int(value_id) for value_id in np.flatnonzero(bound >= needed)),
        key=lambda value_id: (
            -int(ahead[value_id]),
            int(whole[value_id]),
            int(room[value_id]),
            names[value_id],
        ),
    )
    for value_id in candidates:
        within_domain = replace(request, within=labelled & (values == value_id))
        placed = place(_filling(within_domain, inner=inner))
        if len(placed) >= needed:
            return GangPlacement(placed, names[value_id], (), len(placed), key=domains.key)
        bound[value_id] = len(placed)
    if request.slicing is not None:
        bound = np.minimum(bound, whole * request.slicing.size)
    fits = sorted(zip(names, (int(count) for count in bound), strict=True))
    domain_fits = tuple(DomainFit(f"{domains.key}={name}", count) for name, count in fits)
    return GangPlacement({}, None, domain_fits, int(bound.max(initial=0)), key=domains.key)


def _tally(
    request: FitRequest, labelled: BoolArray, domains: Domains
) -> tuple[Counts, Counts, Counts, Counts]:
    """Per domain: at most how many members fit (with slices, in whole slices, a
    partial one allowed for), the copies that fit, how many fit on `head_start`, and
    the whole slices that fit (zeros without slices)."""
    free, head_start, slicing = request.free, request.head_start, request.slicing
    values, count = domains.values, len(domains.names)
    bound = np.zeros(count, dtype=np.int64)
    room = np.zeros(count, dtype=np.int64)
    ahead = np.zeros(count, dtype=np.int64)
    node_room = np.zeros(values.shape, dtype=np.int64)
    for shape in request.shapes:
        copies = shape.copies(free, labelled)
        node_room += np.minimum(copies, len(shape.pods))
        per_domain = domain_counts(copies, values, count)
        room += per_domain
        bound += np.minimum(per_domain, len(shape.pods))
        if head_start is not None:
            already = domain_counts(shape.copies(head_start, labelled), values, count)
            ahead += np.minimum(already, len(shape.pods))
    whole = np.zeros(count, dtype=np.int64)
    if slicing is not None:
        whole = slicing.whole_slices(node_room, values, count)
        bound = np.minimum(bound, whole * slicing.size + slicing.size - 1)
    return bound, room, ahead, whole
