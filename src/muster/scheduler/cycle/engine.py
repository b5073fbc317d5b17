"""One scheduling cycle: the queue walked in order over one consistent view.

Each step is a method of `_Cycle`, called in this order by `run`:

- `_follow_admitted`: follow admitted gangs (`follow`); those waiting for their
  victims, or to be rolled back, neither grow nor release this cycle. Groups the
  cycle before found quiet, and unchanged since, are left out.
- `_repair`: admitted gangs that dropped below `minCount` get their missing pods
  (replacement pods first), all at once or none; a gang whose minCount was raised
  keeps its pods not yet released waiting until bound and placeable members reach it.
- `_decide_pending`: pending gangs by priority, then age (`queue`, kept from the
  cycle before), but those whose kept verdict holds unvisited (`backlog`), and those
  refused as the last of their kind was on a view not changed since (`alike`). A gang
  in backoff, or taken down and not yet gone, is benched (it takes no capacity);
  each gang that fits is admitted (its placements are taken out of the view at once,
  `board`), else preemption is tried, else the verdict says why not (`refusal`). A
  gang that does not fit never blocks the ones behind it, unless it has waited past
  `starvation_seconds` (since it last started waiting): then it closes nodes
  (`refusal.close_nodes`), and later gangs cannot use them.
  When every gang tried fits, `schedule` decides the cycle again with them placed
  the largest first, and keeps that if it leaves more of the cluster whole
  (`packing`): the queue's order then decides nothing but where.
- `_grow_admitted`: admitted gangs with members beyond `minCount` grow, as they fit.
- `_plan`: all of it turned into the plan (`transitions`): ordered steps, each
  group's status; the pods of Jobs whose opt-in the API server dropped let go
  (`let_go`); and the warnings to give (`notices`).

The state is only read: every decision lives in the returned `CycleResult`, and what
the next cycle is to be handed (the groups found quiet, the notices given) in its
`carried`.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np

from muster.api.keys import GroupKey
from muster.scheduler.config import EngineConfig
from muster.scheduler.cycle import refusal
from muster.scheduler.cycle.alike import Alike
from muster.scheduler.cycle.backlog import Backlog, Skipping
from muster.scheduler.cycle.board import Board
from muster.scheduler.cycle.memo import Memo
from muster.scheduler.cycle.notices import notices
from muster.scheduler.cycle.packing import better_packed, largest_first
from muster.scheduler.cycle.queue import Gang, Queue
from muster.scheduler.decisions.plan import Notice, Plan
from muster.scheduler.decisions.results import (
    NOTHING_CARRIED,
    Admission,
    Carried,
    CycleResult,
    Growth,
    KeptVerdict,
    Reason,
    Verdict,
    Verdicts,
)
from muster.scheduler.devices.preemption import DevicePreemption, claimed_devices
from muster.scheduler.lifecycle import transitions
from muster.scheduler.lifecycle.follow import Following, follow
from muster.scheduler.lifecycle.let_go import let_go
from muster.scheduler.lifecycle.transitions import TAKEN_DOWN, Planner, released_members
from muster.scheduler.placement.explain import waiting_message
from muster.scheduler.placement.fit import Counts, Matrix, Shape
from muster.scheduler.placement.interplay import GangInterplay
from muster.scheduler.placement.place import place
from muster.scheduler.placement.preemption import PreemptionSearch
from muster.scheduler.placement.topology import GangPlacement
from muster.scheduler.state.state import ClusterState


def schedule(
    state: ClusterState,
    *,
    now: float,
    config: EngineConfig,
    carried: Carried = NOTHING_CARRIED,
    told: bool = True,
) -> CycleResult:
    """Decide one cycle: admissions, growths of admitted gangs, verdicts for the rest,
    and the plan that carries them out; `carried`: what the cycle before handed on
    (its `CycleResult.carried`). When every gang the cycle tried fits, it is decided
    again with them placed the largest first, kept if it leaves more of the cluster
    whole (`packing`). Not `told`: the plan leaves out the statuses and warnings of
    the gangs that wait, for a caller that writes none (a forecast's later cycles);
    what the cycle decides is the same."""
    cycle = _Cycle(state, now, config, carried, told=told)
    result = cycle.run()
    order = cycle.largest_first()
    if order is None:
        return result
    again = _Cycle(state, now, config, carried, first=order, told=told)
    packed = again.run()
    return packed if better_packed(packed, again.board, result, cycle.board) else result


class _Cycle:
    def __init__(
        self,
        state: ClusterState,
        now: float,
        config: EngineConfig,
        carried: Carried,
        first: tuple[GroupKey, ...] = (),
        told: bool = True,
    ) -> None:
        self.state = state
        self.first = first  # pending gangs decided before the others, in this order
        self.told = told  # the waiting gangs' statuses and warnings planned (`schedule`)
        self.now = now
        self.config = config
        self.carried = carried
        self.quiet = carried.still_quiet(state.changed)
        self.board = Board(state, config)
        ledger = self.board.devices
        claimed = None if ledger is None else partial(claimed_devices, state, ledger)
        self.preemption = PreemptionSearch(state, self.board.table, claimed)
        self.memo = Memo(self.board, config, now, carried.kept, self.preemption)
        self.alike = Alike(self.board, config, now, self.memo)
        before = carried.backlog if isinstance(carried.backlog, Backlog) else None
        self.queue = Queue(state, now) if before is None else before.queue.next(state, now)
        self.skipping = Skipping(
            before, self.queue, memo=self.memo, board=self.board, config=config
        )
        self.kept: dict[GroupKey, KeptVerdict] = {}
        self.given_again = 0  # kept verdicts given again to gangs not visited
        self.admissions: list[Admission] = []
        self.growths: dict[GroupKey, dict[str, str]] = {}
        self.verdicts: dict[GroupKey, Verdict] = {}
        self.benched: set[GroupKey] = set()
        self.short: set[GroupKey] = set()  # admitted, minCount raised beyond what fits
        self.crowded = False  # a pending gang was tried and did not fit
        self.wake: list[float] = []  # when to decide again though nothing changes

    def run(self) -> CycleResult:
        followed = self._follow_admitted()
        busy = {key for key, got in followed.items() if got.rollback or got.awaiting}
        admitted = [gang for gang in self.queue.growing if gang.key not in busy]
        self._repair(admitted, [key for key in followed if key not in busy])
        self._decide_pending()
        self._grow_admitted(admitted, followed)
        return self._result(followed)

    def _result(self, followed: dict[GroupKey, Following]) -> CycleResult:
        plan = self._plan(followed)
        given: tuple[Notice, ...] = ()  # the notices to give now
        standing, due = self.carried.told, None
        if self.told:
            given, standing, due = notices(
                self.state, now=self.now, config=self.config, told=self.carried.told
            )
        quiet = self._quiet_to_hand_on()
        wake_at = min((m for m in (plan.wake_at, due, *self.wake) if m is not None), default=None)
        return CycleResult(
            admissions=tuple(self.admissions),
            growths=tuple(
                Growth(key, placements) for key, placements in sorted(self.growths.items())
            ),
            verdicts=Verdicts(
                self.verdicts,
                self.kept,
                given_again=self.given_again,
                position=self.queue.position,
                order=partial(self.queue.order, self.first),
            ),
            plan=replace(plan, wake_at=wake_at, notices=given),
            carried=Carried(
                quiet,
                self.state.changes,
                standing,
                self.kept,
                self.skipping.backlog(self.kept, quiet),
            ),
        )

    def _given_again(self, key: GroupKey) -> Verdict:
        """The kept verdict of a gang not visited (`backlog`), at its position now."""
        return self.kept[key].verdict.at_position(self.queue.position(key))

    def _quiet_to_hand_on(self) -> frozenset[GroupKey]:
        """The quiet groups. One deleted while quiet stays among them (re-made, it has
        changed since) until they outnumber the groups: then all such go at once,
        rather than every cycle looking up thousands of groups for them."""
        if len(self.quiet) > len(self.state.groups):
            return frozenset(self.quiet.intersection(self.state.groups))
        return frozenset(self.quiet)

    # ---- the steps -----------------------------------------------------------------

    def _follow_admitted(self) -> dict[GroupKey, Following]:
        groups = self.state.groups
        return {
            key: follow(self.state, groups[key], now=self.now, config=self.config)
            for key in sorted(groups.keys() - self.quiet)
            if groups[key].gang and groups[key].admitted
        }

    def _repair(self, admitted: list[Gang], idle: list[GroupKey]) -> None:
        """`idle`: the followed gangs neither awaiting victims nor rolled back."""
        for gang in admitted:
            if gang.missing:
                self._grow(gang, limit=gang.missing)
        self.short |= {key for key in idle if self._short_with_nothing_to_place(key)}

    def _decide_pending(self) -> None:
        """In queue order, or `first` before the others; a gang's position is always
        its place in the queue. A gang whose kept verdict holds unvisited is skipped
        (`backlog`): the view changes only as gangs are admitted or close nodes, and
        each change wakes the gangs behind that it may concern."""
        queue, skipping = self.queue, self.skipping
        skipping.woken_by_view(0)  # by the members repaired before
        for key in self.first:
            skipping.visiting(key)
            self._decide_safely(queue.gangs[key], queue.position(key))
            skipping.woken_by_view(0)
        for position, key in skipping.walk():
            self._decide_safely(queue.gangs[key], position)
            skipping.woken_by_view(position)
        self.kept = skipping.hand_on(self.memo.before)
        self.given_again = len(self.kept) - len(self.memo.kept)
        if self.given_again:
            self.crowded = True  # they were refused, and are again

    def largest_first(self) -> tuple[GroupKey, ...] | None:
        """The gangs this cycle admitted, the largest first, when deciding them again in
        that order may pack them tighter: two or more admitted, nobody taken down, and
        no gang tried that did not fit (then the queue's order is what counts)."""
        if self.first or self.crowded:
            return None
        admitted = {a.group for a in self.admissions if a.placements and not a.victims}
        if len(admitted) < 2 or len(admitted) < len(self.admissions):
            return None
        waiting = [self.queue.gangs[key] for _, key in self.queue.waiting]
        order = largest_first(waiting, admitted, self.board.capacity)
        in_queue = tuple(gang.key for gang in waiting if gang.key in admitted)
        return None if order == in_queue else order

    def _grow_admitted(self, admitted: list[Gang], followed: dict[GroupKey, Following]) -> None:
        """Members beyond minCount, as they fit; a gang left short releases none of its
        members held back (it is followed again, as such). A quiet gang whose members found
        room (a node added, a pod gone: nothing of its own changed) is followed now, so
        that its growth is planned."""
        for gang in admitted:
            if gang.key not in self.short:
                self._grow(gang, limit=len(gang.pending))
        for key in sorted(self.growths.keys() - followed.keys()):
            group = self.state.groups[key]
            followed[key] = follow(self.state, group, now=self.now, config=self.config)
        for key in self.short:
            group = self.state.groups[key]
            followed[key] = follow(
                self.state, group, now=self.now, config=self.config, release_deferred=True
            )

    def _plan(self, followed: dict[GroupKey, Following]) -> Plan:
        planner = Planner(self.state, now=self.now, config=self.config)
        for admission in self.admissions:
            planner.admit(admission)
        for key, following in followed.items():
            if key not in planner.statuses:
                planner.follow(self.state.groups[key], following, self.growths.get(key, {}))
        again = {  # not visited, given their kept verdict again; status still to write
            key
            for key in self.skipping.telling
            if key in self.kept and key not in self.memo.kept and key not in self.quiet
        }
        for key in sorted(self.verdicts.keys() | again) if self.told else ():
            verdict = self.verdicts.get(key) or self._given_again(key)
            if key in planner.statuses or (key in self.quiet and key in self.memo.recalled):
                continue  # refused as before, and its status already says so
            group = self.state.groups[key]
            if key in self.benched and released_members(self.state, key):
                planner.take_down(group)
                continue
            kept = key in self.benched or (
                group.reason in TAKEN_DOWN and verdict.reason is Reason.WAITING_FOR_PODS
            )
            planner.verdict(group, verdict, kept=kept)
        for key in sorted(self.state.groups.keys() - self.quiet) if self.told else ():
            planner.refresh(key)
        idle = planner.idle()
        self.quiet |= {key for key in idle if key in followed and followed[key].settled}
        self.quiet |= {key for key in idle if not self.state.groups[key].gang}
        self.quiet |= self._quiet_waiting(planner, idle)
        plan = planner.plan(idle=idle)
        return replace(plan, steps=(*plan.steps, *let_go(self.state)))

    def _quiet_waiting(self, planner: Planner, idle: set[GroupKey]) -> set[GroupKey]:
        """Waiting gangs whose verdict is kept and whose status already says it: a later
        cycle that gives the kept verdict again plans nothing for them while they do not
        change (`memo`). One with a status still to write is not quiet."""
        self.quiet -= {
            key for key in planner.statuses.keys() - idle if key in self.state.unadmitted_gangs
        }
        return {key for key in idle if key in self.kept}

    # ---- pending gangs -------------------------------------------------------------

    def _decide_safely(self, gang: Gang, position: int) -> None:
        """A failure while deciding one gang is that gang's `SchedulerError`, not the cycle's.

        Whatever the failed decision had already taken from the view stays taken (the
        view only ever shrinks during a decision), so the gangs behind it are decided
        conservatively rather than on a view that double-books.
        """
        try:
            self._decide(gang, position)
        except Exception as error:
            message = f"internal error while deciding: {type(error).__name__}: {error}"
            self.verdicts[gang.key] = Verdict(Reason.SCHEDULER_ERROR, message)

    def _decide(self, gang: Gang, position: int) -> None:
        record = gang.record
        benched = self._benched(gang)
        if benched is not None:
            self.verdicts[gang.key] = benched
            return
        kept = self.memo.recall(gang, position)
        if kept is not None:  # refused before, and nothing it read has changed since
            self.crowded = True
            self.verdicts[gang.key] = kept
            return
        arriving = refusal.arriving_until(gang, self.now, self.config)
        kind = self.alike.kind(gang, arriving=arriving is not None)
        alike = self.alike.recall(gang, kind, position)
        if alike is not None:  # one of its kind was refused on this very view
            self.crowded = True
            self.verdicts[gang.key] = alike
            return
        shapes, interplay = self.board.shapes(gang.pending, record)
        if not shapes:
            self.admissions.append(Admission(gang.key, {}))
            return
        request = self.board.request(gang, shapes, interplay, needed=gang.missing)
        placement = self.board.fit(gang, request)
        if placement.placements or gang.missing == 0:
            self.board.take(gang, placement.placements)
            self.admissions.append(self._admission(gang, placement))
            return
        self.crowded = True
        never = refusal.never(self.board, gang)  # then no victim would make room either
        if never is None and record.preempt and self._preempt(gang, shapes, interplay):
            return
        if arriving is not None:  # told "never" once its pods have stopped arriving
            self.wake.append(arriving)
        preemption_tried = (
            never is None and record.preempt and self.preemption.has_candidates(gang.priority)
        )
        tried = refusal.Tried(
            refusal.Attempt(shapes, interplay, placement),
            never=never if arriving is None else None,
            preemption=preemption_tried,
        )
        ruled = interplay is not None or self.board.view.anyone_repels
        ruled = ruled or self.board.devices is not None
        ruled = ruled or any(entry.record.inter_pod for entry in gang.pending)
        keep = arriving is None  # while its pods arrive, the verdict changes with the time
        verdict = self.alike.refuse(gang, kind, tried, position=position, ruled=ruled, kept=keep)
        self.verdicts[gang.key] = verdict

    def _benched(self, gang: Gang) -> Verdict | None:
        """Why the gang is not even tried this cycle, if it is not: benched (backoff,
        taken down and not yet gone), fewer pods than minCount, or kept off the nodes
        it needs by kube-scheduler's refusals."""
        record = gang.record
        benched = transitions.benched_by_lifecycle(self.state, record, self.now)
        if benched is not None:
            self.benched.add(gang.key)
            return benched
        if gang.existing < gang.quorum:
            return Verdict(
                Reason.WAITING_FOR_PODS,
                waiting_message(gang.existing, gang.quorum, paused=record.paused),
            )
        return self.board.avoidance.benched_by_refusals(record)

    def _admission(self, gang: Gang, placement: GangPlacement) -> Admission:
        names = self.board.node_names(placement.placements)
        domain, passed_over = placement.chosen_domain, placement.passed_over
        return Admission(gang.key, names, domain, passed_over=passed_over)

    def _preempt(self, gang: Gang, shapes: list[Shape], interplay: GangInterplay | None) -> bool:
        """Inter-pod rules are judged with the victims still in place: a victim that
        repels the gang keeps it out (safe), one it needs is counted as staying. Where
        devices are claimed, what the victims' claims hold makes room too
        (`devices.preemption`)."""
        board = self.board
        devices = None
        if board.devices is not None:
            candidates = self.preemption.candidates(gang.priority)
            devices = DevicePreemption.of(self.state, board.devices, interplay, candidates)

        request = board.request(
            gang,
            shapes,
            interplay if devices is None else devices.interplay,
            needed=gang.missing,
        )

        def fits(free: Matrix, cost: Counts) -> GangPlacement:
            own = free if devices is None else free[:, :-1]
            placement = board.fit(
                gang,
                replace(
                    request, free=own, order=board.order.with_cost(cost), head_start=board.free
                ),
            )
            return placement if devices is None else devices.within(placement, free[:, -1])

        demands = {entry.record.key.name: entry.demand for entry in gang.pending}
        free = board.free
        if devices is not None:
            demands = devices.demands(demands, column=free.shape[1])
            free = devices.free(free)
        plan = self.preemption.search(free, gang.priority, fits, demands)
        if plan is None:
            return False
        remaining = plan.remaining_free
        if devices is not None:
            ledger = devices.verified(plan.victims, plan.placement.placements)
            if ledger is None:
                return False  # the victims chosen would not free the devices it needs
            board.devices, remaining = ledger, remaining[:, :-1]
        board.free = remaining
        board.touch(np.ones(board.table.size, dtype=np.bool_))  # victims anywhere
        board.note_placed(gang, plan.placement.placements)
        admission = self._admission(gang, plan.placement)
        self.admissions.append(replace(admission, victims=plan.victims, violations=plan.violations))
        return True

    # ---- admitted gangs ------------------------------------------------------------

    def _grow(self, gang: Gang, limit: int) -> None:
        """Place up to `limit` more members; below minCount (`limit` is what is
        missing) all of them or none, since a gang runs whole or not at all."""
        board = self.board
        below_quorum = limit == gang.missing and limit > 0
        placed = self.growths.setdefault(gang.key, {})
        pending = [entry for entry in gang.pending if entry.record.key.name not in placed]
        if not pending or limit <= 0:
            if not placed:
                del self.growths[gang.key]
            return
        shapes, interplay = board.shapes(pending, gang.record)
        within = ~board.closed_for_older & board.domain_of(gang)
        # `place` chooses how: whole slices (each beside its placed members), pod by pod
        # under inter-pod rules, or best fit
        chosen = place(board.request(gang, shapes, interplay, needed=0, limit=limit, within=within))
        if below_quorum and len(chosen) < limit:
            self.short.add(gang.key)
            chosen = {}
        board.take(gang, chosen)
        placed.update(board.node_names(chosen))
        if not placed:
            del self.growths[gang.key]

    def _short_with_nothing_to_place(self, key: GroupKey) -> bool:
        """An admitted gang whose minCount was raised beyond the members holding
        capacity (bound or reserved), with no other member to place: its reserved
        members not released yet wait, as `_grow` makes them wait when the members it
        could place fall short."""
        group = self.state.groups[key]
        placed = self.state.placed_members.get(key, 0)
        return key not in self.state.pending_members and placed < self.state.quorum(group)
