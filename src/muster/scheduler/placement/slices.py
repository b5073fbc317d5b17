"""Slices: every N consecutive members of a gang in one domain of a narrower level.

A gang with slices (its PodGroup's topology-slice annotations) has its members cut
into slices of `size`: by completion index where every member has one (slice
`index // size`, so a replaced pod rejoins its slice), else by rank in name order.
Wherever the gang is being fitted (one block of its preferred level, its required
zone, the cluster), each slice is placed whole in one domain of the slice level
inside it, slice after slice: the tightest slice domain that takes it (the fewest
copies of its pods fit there), ties to the name that sorts first. The slices
placed before take their capacity and, under inter-pod rules, are seen by the
rules of the slices after, so the plan holds for kube-scheduler as a whole.

For pods of one shape this is exact, as Kueue counts slices: a domain holds
floor(room / size) slices however the gang is cut, and putting each slice in the
tightest domain that holds one never lowers the whole slices left. A slice some of
whose members are placed already (a gang growing back) goes to their domain.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt

from muster.scheduler.placement.fit import Shape, domain_counts, place_gang
from muster.scheduler.placement.interpod_counts import Session
from muster.scheduler.placement.request import FitRequest
from muster.scheduler.placement.slicing import Slicing
from muster.scheduler.state.predicates import with_refusals

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int32]

ONE_PER_NODE = "node(s) hold a pod of the gang that must be alone on its node"


def place_slices(request: FitRequest) -> dict[str, int]:
    """Pod name -> node slot for the slices that fit, each whole in one slice domain
    (up to the request's limit, whole slices only); the caller judges whether that is
    enough.

    A self-affine gang with nothing to join goes where its first slice lands; when
    that leaves slices out, each domain of its affinity is tried in turn, as
    `retries.pod_by_pod` does for a gang without slices."""
    best = _slices_within(request)
    interplay, limit = request.interplay, request.limit
    total = sum(len(shape.pods) for shape in request.shapes)
    if interplay is None or len(best) >= min(total, limit or total):
        return best
    for domain in interplay.open_domains(request.free, request.shapes, within=request.within):
        attempt = _slices_within(replace(request, within=domain))
        if len(attempt) > len(best):
            best = attempt
    return best


def _slices_within(request: FitRequest) -> dict[str, int]:
    """The slices that fit on the nodes of `request.within`, slice after slice."""
    free, shapes, interplay, slicing = (
        request.free,
        request.shapes,
        request.interplay,
        request.slicing,
    )
    assert slicing is not None, "only a gang with slices is placed slice by slice"
    work = free.copy()
    session = interplay.session() if interplay is not None else None
    shape_of = {pod: index for index, shape in enumerate(shapes) for pod in shape.pods}
    cap = len(shape_of) if request.limit is None else request.limit
    taken = [np.zeros(len(free), dtype=np.bool_) for _ in shapes]  # one-per-node shapes
    placed: dict[str, int] = {}
    for group, anchor in zip(slicing.groups, slicing.anchors, strict=True):
        members = {pod for pod in group if pod in shape_of}
        if not members or len(placed) + len(members) > cap:
            continue
        part = [_part(shape, members, taken[index]) for index, shape in enumerate(shapes)]
        got, session = _place_slice(
            replace(request, free=work, shapes=part), slicing, anchor=anchor, session=session
        )
        for pod, slot in got.items():
            work[slot] -= shapes[shape_of[pod]].demand
            taken[shape_of[pod]][slot] = True
        placed.update(got)
    return placed


def _part(shape: Shape, members: set[str], taken: BoolArray) -> Shape:
    """The shape's pods in one slice; a shape of one pod per node kept off the nodes
    its pods in the slices before took."""
    part = replace(shape, pods=tuple(pod for pod in shape.pods if pod in members))
    if shape.one_per_node and taken.any():
        part = replace(part, rules_filter=with_refusals(shape.rules_filter, taken, ONE_PER_NODE))
    return part


def _place_slice(
    request: FitRequest, slicing: Slicing, *, anchor: int, session: Session | None
) -> tuple[dict[str, int], Session | None]:
    """One slice (the request's shapes, cut to its pods) whole in the tightest slice
    domain that takes it (its anchor, if it has one); nothing, with the session
    unchanged, if none does."""
    free, part, interplay = request.free, request.shapes, request.interplay
    values, count = slicing.values, len(slicing.names)
    labelled = request.within & (values >= 0)
    room = np.zeros(count, dtype=np.int64)
    for shape in part:
        if shape.pods:
            per_domain = domain_counts(shape.copies(free, labelled), values, count)
            room += np.minimum(per_domain, len(shape.pods))
    needed = sum(len(shape.pods) for shape in part)
    fitting = np.flatnonzero(room >= needed)
    ranked = fitting[np.lexsort((slicing.name_rank[fitting], room[fitting]))]
    candidates = [int(value_id) for value_id in ranked]
    if anchor >= 0:
        candidates = [anchor] if room[anchor] >= needed else []
    shaped = [shape for shape in part if shape.pods]
    for value_id in candidates:
        inside = labelled & (values == value_id)
        after = session
        if interplay is None or session is None:
            got = place_gang(
                free,
                shaped,
                within=inside,
                order=request.order,
                largest=request.largest,
                needed=needed,
            )
        else:
            got, after = interplay.place_in(
                free, part, within=inside, order=request.order, session=session
            )
        if len(got) >= needed:
            return got, after
    return {}, session
