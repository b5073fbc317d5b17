"""Gangs alike: refused as the last of their kind was, on a view not changed since.

A backlog is seldom a thousand different gangs: a team queues the same Job again and
again. When what they wait for frees up (a pool's node ends its pod), every one of
them is woken and decided again in the same cycle, and each decision (a fit over
every node, then the counts that explain the refusal) comes out the same as the one
before it. Within one cycle, a gang whose kind was refused on a view that nothing has
changed since (no placement, no node closed: `Board.touches`) is given that verdict,
at its own position in the queue, without the work. A gang waiting past starvation
still closes the nodes it needs (`refusal.close_nodes`), which changes the view for
the next; once one of its kind on this view closed none, neither would the next.

The kind is all that a fit and its explanation read of a gang: its pending pods'
demands and placement rules, what it misses and has, its domain and preferred level,
its priority and whether it may preempt, its namespace. Only gangs whose refusal
depends on nothing else may share one: no inter-pod rules of their own or anyone's,
no volumes, devices or host ports, no slices, no nodes kube-scheduler refused them,
no members placed, none still arriving.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, replace

from muster.scheduler.config import EngineConfig
from muster.scheduler.cycle import refusal
from muster.scheduler.cycle.board import Board
from muster.scheduler.cycle.memo import Memo
from muster.scheduler.cycle.queue import Gang
from muster.scheduler.decisions.results import Verdict


@dataclass(frozen=True, slots=True)
class Refused:
    """A refusal as decided, before starvation closed any node, and the view it was
    decided on."""

    touches: int  # `Board.touches` then
    tried: refusal.Tried
    told: Verdict  # `refusal.told_why`
    closed: int | None  # nodes its gang closed, starving; None: it was not starving
    ruled: bool


class Alike:
    """The refusals of this cycle, by kind of gang."""

    def __init__(self, board: Board, config: EngineConfig, now: float, memo: Memo) -> None:
        self.board = board
        self.config = config
        self.now = now
        self.memo = memo
        self.refused: dict[Hashable, Refused] = {}

    def kind(self, gang: Gang, *, arriving: bool) -> Hashable | None:
        """What the gang's refusal reads of it; None when it may depend on more."""
        board, record = self.board, gang.record
        if not self.config.keep_verdicts or arriving or gang.placed or record.slicing:
            return None
        if board.devices is not None or board.view.anyone_repels:
            return None
        if board.avoidance.memory(record) is not None:
            return None
        pods = []
        for entry in gang.pending:
            pod = entry.record
            if pod.inter_pod or pod.claims or pod.device_claims or pod.host_ports:
                return None
            pods.append((entry.demand, pod.rules))
        return (
            tuple(pods),  # in name order: alike when equal, whatever the names
            gang.missing,
            gang.existing,
            gang.quorum,
            record.topology_key,
            record.preferred_key,
            gang.priority,
            record.preempt,
            record.paused,
            gang.key.namespace,
        )

    def recall(self, gang: Gang, kind: Hashable | None, position: int) -> Verdict | None:
        """The refusal of the gang's kind, at `position`, if the view is still the one it
        was decided on; kept for the gang as a refusal decided for it would be (`memo`)."""
        refused = None if kind is None else self.refused.get(kind)
        if refused is None or refused.touches != self.board.touches:
            return None
        told = refused.told.at_position(position)
        verdict, closed = self._starved(gang, refused.tried, told, refused.closed)
        if closed == 0:  # the view is still the one decided on
            self.refused[kind] = replace(refused, closed=0)
        self._keep(gang, verdict, refused.tried, refused.ruled)
        return verdict

    def refuse(
        self,
        gang: Gang,
        kind: Hashable | None,
        tried: refusal.Tried,
        *,
        position: int,
        ruled: bool,
        kept: bool,
    ) -> Verdict:
        """The gang's refusal, decided (`refusal.told_why`, then `_starved`), noted for
        the gangs of its kind after it, and `kept` (`memo`); `ruled`: inter-pod rules or
        devices were weighed."""
        touches = self.board.touches
        told = refusal.told_why(self.board, gang, tried, position=position)
        verdict, closed = self._starved(gang, tried, told, None)
        if kind is not None:
            self.refused[kind] = Refused(touches, tried, told, closed, ruled)
        if kept:
            self._keep(gang, verdict, tried, ruled)
        return verdict

    def _starved(
        self, gang: Gang, tried: refusal.Tried, told: Verdict, closed_before: int | None
    ) -> tuple[Verdict, int | None]:
        """The refusal with the nodes it closes, if it starves, and how many it closed
        (none again where one of its kind closed none on this view)."""
        waited = self.now - gang.waiting_since
        if not refusal.starving(told, waited, self.config):
            return told, None
        closed = 0 if closed_before == 0 else refusal.close_nodes(self.board, gang, tried.now)
        return refusal.starved(self.board, told, waited, closed), closed

    def _keep(self, gang: Gang, verdict: Verdict, tried: refusal.Tried, ruled: bool) -> None:
        self.memo.keep(gang, verdict, preemption_tried=tried.preemption, ruled=ruled)
