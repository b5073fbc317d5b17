"""Why a gang that does not fit waits (`refuse`), and the nodes closed for it once it
starves (`close_nodes`)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from muster.scheduler.config import EngineConfig
from muster.scheduler.cycle.board import Board, BoolArray
from muster.scheduler.cycle.queue import Gang
from muster.scheduler.decisions.results import Explanation, Reason, SliceFit, Verdict
from muster.scheduler.placement.explain import (
    PREEMPTION_WOULD_NOT_HELP,
    GangBounds,
    shortages,
    shortfalls,
    slice_fit,
    too_large,
    unschedulable_message,
)
from muster.scheduler.placement.fit import Matrix, Shape
from muster.scheduler.placement.interplay import GangInterplay
from muster.scheduler.placement.topology import GangPlacement, fit_anywhere


@dataclass(frozen=True, slots=True)
class Attempt:
    """A gang's shapes and rules, and how close they came to a placement."""

    shapes: list[Shape]
    interplay: GangInterplay | None
    placement: GangPlacement


def never(board: Board, gang: Gang) -> Attempt | None:
    """How the gang fares on the empty cluster (every node's allocatable, no other
    pod placed, no node closed to others), if it does not fit even there; None if
    it does, or if the search could not tell (`retries`). A fit is remembered: the
    question is asked of every waiting gang, every cycle, and the answer holds until
    the nodes or the gang change."""
    key = _alone_key(board, gang)
    if board.table.fits_alone(key):
        return None
    shapes, interplay = board.shapes(gang.pending, gang.record, alone=True)
    everywhere = np.ones(board.table.size, dtype=np.bool_)
    request = board.request(gang, shapes, interplay, needed=gang.missing, within=everywhere)
    placement = board.fit(gang, replace(request, free=board.capacity))
    if placement.placements:
        board.table.remember_fits_alone(key)
        return None
    if interplay is not None and interplay.unsure:
        return None  # a placement may exist that the bounded search did not reach
    return Attempt(shapes, interplay, placement)


def arriving_until(gang: Gang, now: float, config: EngineConfig) -> float | None:
    """Until when more of the gang's pods may still be on their way (its newest pod's
    creation, plus `arrival_grace`), if they may be now; None otherwise."""
    created = [entry.record.created for entry in gang.pending]
    newest = max((moment for moment in created if moment is not None), default=None)
    if newest is None or newest + config.arrival_grace <= now:
        return None
    return newest + config.arrival_grace


def _alone_key(board: Board, gang: Gang) -> Hashable:
    """All that decides whether a gang fits on the empty cluster, besides the node
    table: its pending pods (whose placement rules do not change while they wait),
    what it still misses, its domain key and slices, the nodes it avoids, and every
    node's allocatable."""
    memory = board.avoidance.memory(gang.record)
    return (
        board.capacity_digest(),
        gang.key,
        frozenset(entry.record.key.name for entry in gang.pending),
        gang.missing,
        gang.record.topology_key,
        gang.record.slicing,
        None if memory is None else memory.node_names,
        tuple(sorted(board.state.namespace_labels.get(gang.key.namespace, {}).items())),
    )


@dataclass(frozen=True, slots=True)
class Tried:
    """How a gang fared: on the cluster now; on the empty cluster, when it does not
    fit even there (None otherwise); and whether preemption was tried for it."""

    now: Attempt
    never: Attempt | None
    preemption: bool


def told_why(board: Board, gang: Gang, tried: Tried, *, position: int) -> Verdict:
    """Why the gang waits, as of the cluster now (`tried.now`: how it fared on it);
    or, when it would not fit even on the empty cluster (`tried.never`: how it fared
    there), as of that cluster, since nothing that ends can help it."""
    now_tried, never, preemption_tried = tried.now, tried.never, tried.preemption
    judged, free, kept_off = now_tried, board.free, board.closed_for_older
    if never is not None:
        judged, free, kept_off = never, board.capacity, np.zeros(board.table.size, dtype=np.bool_)
    explanation = _explanation(
        board, gang, judged, free, kept_off, position=position, never=never is not None
    )
    spread_limited = judged.interplay is not None or any(
        shape.one_per_node for shape in now_tried.shapes
    )
    key = gang.record.topology_key
    message = unschedulable_message(explanation, key, spread_limited=spread_limited)
    if preemption_tried:
        message = f"{message}; {PREEMPTION_WOULD_NOT_HELP}"
    return Verdict(Reason.UNSCHEDULABLE, message, explanation)


def starving(told: Verdict, waited: float, config: EngineConfig) -> bool:
    """Whether the gang refused so closes nodes: it has waited past starvation, and it
    would fit the empty cluster (one that never would closes none)."""
    never = told.explanation is not None and told.explanation.never
    return waited > config.starvation_seconds and not never


def starved(board: Board, told: Verdict, waited: float, closed: int) -> Verdict:
    """The refusal of a starving gang that has just closed `closed` nodes."""
    if closed:
        board.touch(board.closed_for_older)
    after = f"closing nodes for it after {waited:.0f}s in the queue"
    if closed:
        said = f"{after} ({closed} node(s) closed to the gangs behind it)"
    elif board.closed_for_older.any():
        said = f"not {after}: the nodes it needs are closed for gangs ahead"
    else:  # other pods' inter-pod rules keep it off what it would need
        said = f"not {after}"
    return replace(told, message=f"{told.message}; {said}")


def _explanation(
    board: Board,
    gang: Gang,
    attempt: Attempt,
    free: Matrix,
    closed: BoolArray,
    *,
    position: int,
    never: bool,
) -> Explanation:
    """The counts behind a refusal, on `free` with `closed` nodes closed to the gang."""
    key = gang.record.topology_key
    table = board.table
    unlabelled = np.zeros(table.size, dtype=np.bool_)
    if key is not None:
        unlabelled = table.labels.values_of(key) < 0
    usable = ~closed & ~unlabelled
    seen = _as_seen(board, gang, attempt, free, usable)
    feasible, reasons = shortages(
        seen.free,
        shapes=seen.shapes,
        table=table,
        bounds=GangBounds(closed, key, unlabelled),
        resource_names=board.state.resource_names,
        scope=seen.scope,
    )
    return Explanation(
        nodes_total=int((table.alive if seen.scope is None else table.alive & seen.scope).sum()),
        nodes_feasible=feasible,
        shortages=reasons,
        needed=gang.quorum,
        existing=gang.existing,
        best_fit=attempt.placement.best_fit + gang.placed,
        domains=attempt.placement.fits,
        queue_position=position,
        shortfalls=shortfalls(
            free,
            shapes=attempt.shapes,
            usable=usable,
            missing=gang.missing,
            domain_of=None if key is None else table.labels.values_of(key),
            resource_names=board.state.resource_names,
        ),
        never=never,
        placed_first=seen.placed_first,
        counted_in=seen.counted_in,
        too_large=too_large(
            board.capacity,
            shapes=attempt.shapes,
            alive=table.alive,
            resource_names=board.state.resource_names,
        )
        if never
        else (),
        slices=_slices(board, gang, attempt, free, usable),
    )


def _slices(
    board: Board, gang: Gang, attempt: Attempt, free: Matrix, usable: BoolArray
) -> SliceFit | None:
    """The gang's slices and, when no slice domain has room for one, the closest."""
    slicing = board.slicing(gang)
    if slicing is None:
        return None
    return slice_fit(free, shapes=attempt.shapes, usable=usable, slicing=slicing)


@dataclass(frozen=True, slots=True)
class _Seen:
    """What the node counts of a refusal are taken on."""

    free: Matrix
    shapes: Sequence[Shape]
    scope: BoolArray | None = None  # the domain counted in, when one is
    counted_in: str | None = None
    placed_first: int = 0


def _as_seen(board: Board, gang: Gang, attempt: Attempt, free: Matrix, usable: BoolArray) -> _Seen:
    """The free capacity and shapes the counts are taken on. When inter-pod rules leave
    pods out, the counts are those kube-scheduler would give the first pod left out
    once the others are placed: in the domain where most of the gang fits, with a
    topology key, so that the rule that stops it inside a domain is named."""
    if attempt.interplay is None:
        return _Seen(free, attempt.shapes)
    domain = _best_domain(board, gang.record.topology_key, attempt.placement)
    within = usable if domain is None else usable & domain[1]
    refusal = attempt.interplay.refusal_filter(
        free, attempt.shapes, within=within, order=board.order
    )
    if refusal is None:
        return _Seen(free, attempt.shapes)
    rules_filter, shape, seen_free, placed_first = refusal
    shapes = [replace(shape, inter_pod_filter=rules_filter)]
    if domain is None:
        return _Seen(seen_free, shapes, placed_first=placed_first)
    return _Seen(seen_free, shapes, domain[1], domain[0], placed_first)


def _best_domain(
    board: Board, key: str | None, placement: GangPlacement
) -> tuple[str, BoolArray] | None:
    """The domain where most of the gang fits (`zone=a`, its nodes), with a key."""
    if key is None or not placement.fits:
        return None
    best = min(placement.fits, key=lambda fit: (-fit.fits, fit.domain))
    value = best.domain.split("=", 1)[1]
    values = board.table.labels.values_of(key)
    nodes: BoolArray = values == board.table.labels.id_of(key, value)
    return best.domain, nodes


def close_nodes(board: Board, gang: Gang, attempt: Attempt) -> int:
    """Close nodes to the gangs behind a starving gang, so they fill up for it.

    The nodes closed are those the gang would use if they were empty, chosen among
    the nodes closest to hosting it now (most of its pods fit there already); with
    a topology key, the whole domain where most of its pods fit now (and where it
    would fit, empty). As pods on those nodes finish, nothing else takes their
    place. A gang that would not fit even on empty nodes closes none: it could
    never use them. Returns the number of nodes closed.
    """
    within = ~board.closed_for_older
    key = gang.record.topology_key
    shapes, interplay = attempt.shapes, attempt.interplay
    on_empty = replace(
        board.request(gang, shapes, interplay, needed=gang.missing), free=board.capacity
    )
    if key is None:
        order = board.order.with_cost(-shapes[0].copies(board.free, within))
        empty = board.fit(gang, replace(on_empty, order=order))
        nodes = sorted(set(empty.placements.values()))
        board.closed_for_older[nodes] = True
        return len(nodes)
    values = board.table.labels.values_of(key)
    for domain_fit in sorted(attempt.placement.fits, key=lambda fit: (-fit.fits, fit.domain)):
        value = domain_fit.domain.split("=", 1)[1]
        domain = within & (values == board.table.labels.id_of(key, value))
        empty = fit_anywhere(replace(on_empty, within=domain))
        if empty.placements:
            board.closed_for_older |= domain
            return int(domain.sum())
    return 0
