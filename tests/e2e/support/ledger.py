"""The partial-gang rules as a pure ledger: pod states in, rises and falls judged.

The rules (Rise, Fall) and their grace are described in tests/e2e/support/observer.py,
which feeds this ledger from watches; it is pure, so it is tested without a cluster
(tests/e2e/test_observer.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

GRACE_SECONDS = float(os.environ.get("MUSTER_E2E_PARTIAL_GANG_GRACE", "5"))
FINISHED = ("Succeeded", "Failed")


def clock(at: datetime) -> str:
    return at.strftime("%H:%M:%S.%f")[:-3] + "Z"


# ---- the rule, with no I/O ------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    """A member pod as the rule sees it."""

    gang: str | None
    node: str | None = None
    phase: str = ""
    leaving: bool = False  # deletionTimestamp set: being taken down
    bypassed: bool = False  # created bound (its node named): not released by Muster

    @property
    def standing(self) -> bool:
        return bool(self.node) and self.phase not in FINISHED and not self.leaving

    @property
    def held(self) -> bool:
        return self.standing or self.phase == "Succeeded"

    def describe(self, pod: str) -> str:
        where = f"{pod} on {self.node}" if self.node else f"{pod} unbound"
        notes = [self.phase] if self.phase in FINISHED else []
        notes += ["leaving"] if self.leaving else []
        return f"{where} ({', '.join(notes)})" if notes else where


@dataclass(frozen=True)
class Bind:
    pod: str
    node: str
    at: float  # monotonic
    wall: datetime


@dataclass
class Rise:
    """One climb of a gang's standing count from 0."""

    gang: str
    min_count: int
    started: float
    binds: list[Bind] = field(default_factory=list)
    reached: float | None = None  # when the gang held minCount pods
    fell: float | None = None  # when it fell back to 0 standing before reaching minCount
    unbound: list[str] = field(default_factory=list)  # members seen, never bound, in the rise

    @property
    def spread(self) -> float | None:
        """First bind to minCount held, once it is."""
        return None if self.reached is None else self.reached - self.started

    def ended_at(self, now: float) -> float:
        """When the rise was decided (whole, or back to 0), else `now`."""
        end = self.reached if self.reached is not None else self.fell
        return now if end is None else end

    def late(self, grace: float, now: float) -> bool:
        return self.ended_at(now) - self.started > grace

    def describe(self, grace: float) -> str:
        first = self.binds[0].at
        binds = ", ".join(
            f"{b.pod} on {b.node} at {clock(b.wall)} (+{b.at - first:.2f}s)" for b in self.binds
        )
        if self.reached is not None:
            outcome = f"reached minCount only after {self.reached - self.started:.2f}s"
        elif self.fell is not None:
            outcome = f"fell back to 0 bound after {self.fell - self.started:.2f}s"
        else:
            outcome = "still below minCount"
        bound_at_most = max_bound_before(self)
        unbound = ", ".join(self.unbound) or "none"
        return (
            f"partial gang {self.gang}: {bound_at_most} of minCount {self.min_count} pods bound "
            f"for more than {grace:g}s ({outcome}); binds: {binds}; "
            f"members never bound meanwhile: {unbound}"
        )


def max_bound_before(rise: Rise) -> int:
    """How many pods were bound while the rise was short of minCount."""
    return min(len(rise.binds), rise.min_count - 1) if rise.reached else len(rise.binds)


@dataclass
class Fall:
    """A gang that held minCount pods holding fewer while some member still stands."""

    gang: str
    min_count: int
    started: float
    wall: datetime
    lowest: int  # the fewest pods held meanwhile
    members: list[str] = field(default_factory=list)  # as they were at the lowest
    ended: float | None = None
    restored: bool = False  # ended holding minCount again, rather than taken down whole

    def ended_at(self, now: float) -> float:
        """When the fall ended (whole again, or taken down), else `now`."""
        return now if self.ended is None else self.ended

    def lasted(self, now: float) -> float:
        return self.ended_at(now) - self.started

    def late(self, grace: float, now: float) -> bool:
        return self.lasted(now) > grace

    def describe(self, grace: float) -> str:
        if self.ended is None:
            outcome = "still short, not taken down"
        elif self.restored:
            outcome = f"whole again only after {self.lasted(self.ended):.2f}s"
        else:
            outcome = f"taken down whole only after {self.lasted(self.ended):.2f}s"
        return (
            f"partial gang {self.gang}: fell from whole to {self.lowest} of minCount "
            f"{self.min_count} pods at {clock(self.wall)} and stayed short for more than "
            f"{grace:g}s with members standing ({outcome}); members at the lowest: "
            f"{', '.join(self.members)}"
        )


Verdict = Rise | Fall


@dataclass(frozen=True)
class GangPolicy:
    """What the rules need of a gang's PodGroup."""

    min_count: int
    disrupted_whole: bool = True  # `disruptionMode: all`, the default; `single` may fall


@dataclass
class GangState:
    policy: GangPolicy | None  # None: not a gang (no PodGroup, or a `basic` one)
    rise: Rise | None = None
    fall: Fall | None = None


class GangLedger:
    """The rules applied to a stream of pod states; pure, so it is tested without a cluster.

    `policy(gang)` answers the PodGroup's gang policy, or None when the pods are not a
    gang (no PodGroup, or a `basic` one).
    """

    def __init__(self, policy: Callable[[str], GangPolicy | None], grace: float = GRACE_SECONDS):
        self.grace = grace
        self._policy = policy
        self._pods: dict[str, Member] = {}
        self._gangs: dict[str, GangState] = {}  # gangs with a member standing
        self._violated: list[Verdict] = []  # finished rises and falls that broke a rule
        self.risen: list[Rise] = []  # rises that reached minCount in time
        self.undone: list[float] = []  # first bind -> back to 0, of rises undone in time
        self.falls: list[Fall] = []  # every fall, ended or not

    def pod(
        self,
        name: str,
        gang: str | None,
        node: str | None,
        at: float,
        *,
        phase: str = "",
        leaving: bool = False,
        bypassed: bool = False,
    ) -> None:
        """A pod as it is now (added or modified)."""
        before = self._pods.get(name, Member(None)).gang
        self._pods[name] = Member(gang, node or None, phase, leaving, bypassed)
        for touched in {before, gang} - {None}:
            assert touched is not None
            self._update(touched, at)

    def gone(self, name: str, at: float) -> None:
        before = self._pods.pop(name, Member(None)).gang
        if before is not None:
            self._update(before, at)

    def pods(self) -> list[str]:
        return list(self._pods)

    def _members(self, gang: str) -> dict[str, Member]:
        return {pod: m for pod, m in sorted(self._pods.items()) if m.gang == gang}

    def _update(self, gang: str, at: float) -> None:
        members = self._members(gang)
        standing = {pod: m for pod, m in members.items() if m.standing}
        held = sum(m.held for m in members.values())
        state = self._gangs.get(gang)
        if not standing:
            if state is not None:
                del self._gangs[gang]
                self._left(state, at)
            return
        if state is None:
            if all(m.bypassed for m in standing.values()):
                return  # bound by their creators: no release to judge yet
            state = self._gangs[gang] = GangState(self._policy(gang))
            if state.policy is not None:
                state.rise = Rise(gang, state.policy.min_count, started=at)
        if state.policy is None:
            return
        if state.rise is not None:
            self._rising(state, members, held, at)
        elif held >= state.policy.min_count:
            self._end_fall(state, at, restored=True)
        else:
            self._falling(gang, state, members, held, at)

    def _rising(self, state: GangState, members: dict[str, Member], held: int, at: float) -> None:
        rise = state.rise
        assert rise is not None
        wall = datetime.now(UTC)
        seen = {b.pod for b in rise.binds}
        rise.binds.extend(
            Bind(pod, m.node, at, wall)
            for pod, m in members.items()
            if m.standing and m.node and pod not in seen
        )
        seen = {b.pod for b in rise.binds}
        waiting = {pod for pod, m in members.items() if not m.node} | set(rise.unbound)
        rise.unbound = sorted(waiting - seen)
        if held >= rise.min_count:
            rise.reached = at
            state.rise = None
            if rise.late(self.grace, at):
                self._violated.append(rise)
            else:
                self.risen.append(rise)

    def _falling(
        self, gang: str, state: GangState, members: dict[str, Member], held: int, at: float
    ) -> None:
        described = [m.describe(pod) for pod, m in members.items()]
        fall = state.fall
        if fall is None:
            state.policy = policy = self._policy(gang)  # resized, or no gang any more?
            if policy is not None and policy.disrupted_whole and held < policy.min_count:
                state.fall = Fall(gang, policy.min_count, at, datetime.now(UTC), held, described)
                self.falls.append(state.fall)
        elif held < fall.lowest:
            fall.lowest, fall.members = held, described

    def _end_fall(self, state: GangState, at: float, *, restored: bool) -> None:
        fall, state.fall = state.fall, None
        if fall is None:
            return
        fall.ended, fall.restored = at, restored
        if fall.late(self.grace, at):
            self._violated.append(fall)

    def _left(self, state: GangState, at: float) -> None:
        """No member stands any more: the rise is undone, or the gang taken down whole."""
        self._end_fall(state, at, restored=False)
        rise = state.rise
        if rise is None:
            return
        rise.fell = at
        if rise.late(self.grace, at):
            self._violated.append(rise)
        else:
            self.undone.append(at - rise.started)

    def violations(self, now: float) -> list[Verdict]:
        stalled = [v for v in self._in_progress() if v.late(self.grace, now)]
        return [*self._violated, *stalled]

    def _in_progress(self) -> list[Verdict]:
        return [v for s in self._gangs.values() for v in (s.rise, s.fall) if v is not None]

    def undecided(self, now: float) -> float:
        """Seconds until every rise and fall now in progress is decided (0: none is)."""
        pending = [v.started + self.grace - now for v in self._in_progress()]
        return max([0.0, *pending])


# ---- the watch --------------------------------------------------------------------------
