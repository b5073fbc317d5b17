"""What one scheduling cycle decides, as immutable values.

The engine returns these and never acts on them: the operator turns them into API
writes, `simulate` into a report, `explain` into a table. Keeping decisions as data is
what lets all three share one engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from muster.api.constants import (
    REASON_PREEMPTED,
    REASON_ROLLED_BACK,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    REASON_WAITING_FOR_PODS,
)
from muster.api.keys import GroupKey, PodKey
from muster.scheduler.decisions.plan import Notice, Plan
from muster.scheduler.rules.budgets import NO_VIOLATIONS, Violations

__all__ = [
    "NOTHING_CARRIED",
    "Admission",
    "Carried",
    "CycleResult",
    "DomainFit",
    "Explanation",
    "Growth",
    "KeptVerdict",
    "Reads",
    "Reason",
    "Shortage",
    "Shortfall",
    "Verdict",
    "Verdicts",
    "Victim",
]


class Reason(StrEnum):
    """The reason of the `PodGroupScheduled` condition, as users see it."""

    SCHEDULED = REASON_SCHEDULED
    UNSCHEDULABLE = REASON_UNSCHEDULABLE
    WAITING_FOR_PODS = REASON_WAITING_FOR_PODS
    PREEMPTED = REASON_PREEMPTED
    ROLLED_BACK = REASON_ROLLED_BACK
    SCHEDULER_ERROR = REASON_SCHEDULER_ERROR


@dataclass(frozen=True, slots=True)
class Shortage:
    """Why one node (or domain) cannot host a pod: a reason text and how many nodes had it.

    `reason` uses kube-scheduler's wording (`Insufficient nvidia.com/gpu`,
    `node(s) had untolerated taint {gpu: reserved}`, ...) so users recognise it.
    """

    reason: str
    nodes: int


@dataclass(frozen=True, slots=True)
class Shortfall:
    """A resource the gang lacks as a whole, wherever its pods could go.

    `needed` is what its smallest pods still missing ask for together, `free` what is
    free on the nodes that may host them (with a topology key: in the domain with the
    most of it). Amounts in the engine's units: millicores for cpu, else base units.
    """

    resource: str
    needed: int
    free: int


@dataclass(frozen=True, slots=True)
class DomainFit:
    """How many member pods fit at once in one topology domain (or the whole cluster)."""

    domain: str  # "zone=a", or "cluster" without a topology constraint
    fits: int


@dataclass(frozen=True, slots=True)
class SliceFit:
    """A sliced gang's slices, for its refusal: the level and size, and, when no domain
    of that level has room for a whole slice, the one that takes the most of its pods."""

    key: str
    size: int
    most: DomainFit | None = None


@dataclass(frozen=True, slots=True)
class Explanation:
    """Structured reasons first, a sentence second, so `explain` can render a table."""

    nodes_total: int
    nodes_feasible: int  # nodes that can host at least one member pod right now
    shortages: tuple[Shortage, ...]  # sorted by nodes, descending, then reason
    needed: int  # minCount
    existing: int  # member pods that exist (not terminal)
    best_fit: int  # the most member pods placeable at once in any single domain
    domains: tuple[DomainFit, ...]  # per domain, sorted by domain name
    queue_position: int  # 1-based position among pending gangs
    shortfalls: tuple[Shortfall, ...] = ()  # short in total, by resource name
    never: bool = False  # it does not fit even on the empty cluster: counts are of that
    placed_first: int = 0  # node counts taken once this many of its pods are placed
    counted_in: str | None = None  # the domain the node counts are of ("zone=a"), if one
    too_large: tuple[Shortfall, ...] = ()  # never: a pod asks more than any node it may use has
    slices: SliceFit | None = None  # the gang's slices, if it has them


@dataclass(frozen=True, slots=True)
class Verdict:
    """The engine's word on a gang that stays pending this cycle."""

    reason: Reason
    message: str
    explanation: Explanation | None = None

    def at_position(self, position: int) -> Verdict:
        """The verdict with the gang's queue position as it is now."""
        explanation = self.explanation
        if explanation is None or explanation.queue_position == position:
            return self
        return replace(self, explanation=replace(explanation, queue_position=position))


class Verdicts(Mapping[GroupKey, Verdict]):
    """A cycle's verdicts, in the order it came to each gang: those it decided, and
    the kept verdicts it gave again without visiting the gang (`cycle.backlog`), whose
    queue position is filled in only when asked, so that a gang leaving the queue
    ahead of thousands touches none of their verdicts. `kept`: the verdicts kept
    (those of gangs decided this cycle among them), `given_again` of them not decided."""

    def __init__(
        self,
        decided: Mapping[GroupKey, Verdict],
        kept: Mapping[GroupKey, KeptVerdict],
        *,
        given_again: int,
        position: Callable[[GroupKey], int],
        order: Callable[[], Iterable[GroupKey]],
    ) -> None:
        self._decided, self._kept, self._given_again = decided, kept, given_again
        self._position, self._order = position, order

    def __getitem__(self, key: GroupKey) -> Verdict:
        verdict = self._decided.get(key)
        if verdict is not None:
            return verdict
        return self._kept[key].verdict.at_position(self._position(key))

    def __contains__(self, key: object) -> bool:
        return key in self._decided or key in self._kept

    def __iter__(self) -> Iterator[GroupKey]:
        return (key for key in self._order() if key in self)

    def __len__(self) -> int:
        return len(self._decided) + self._given_again

    def __repr__(self) -> str:
        return f"Verdicts({dict(self)!r})"


@dataclass(frozen=True, slots=True)
class Victim:
    """A pod to preempt, with the group it belongs to (None for a plain pod)."""

    pod: PodKey
    group: GroupKey | None
    priority: int
    must_go: bool = False  # taken even if a PodDisruptionBudget refuses its eviction


@dataclass(frozen=True, slots=True)
class Admission:
    """A gang admitted this cycle: where each released pod goes, and who must make room."""

    group: GroupKey
    placements: dict[str, str]  # pod name -> node name
    domain: tuple[str, str] | None = None  # (topology key, value) when constrained
    victims: tuple[Victim, ...] = ()
    violations: Violations = NO_VIOLATIONS  # PodDisruptionBudgets its victims break
    passed_over: tuple[str, ...] = ()  # why not in a narrower preferred level, in words


@dataclass(frozen=True, slots=True)
class Growth:
    """Members of an already admitted gang placed this cycle (beyond its first release)."""

    group: GroupKey
    placements: dict[str, str]


class Reads(StrEnum):
    """What of the cluster's capacity a kept verdict read (`KeptVerdict`)."""

    NOTHING = "nothing"  # it fits nowhere even on the empty cluster, rules or not
    NODES = "nodes"  # the capacity of the nodes its pods' rules allow
    EVERYTHING = "everything"  # all of it (inter-pod rules, devices): any change wakes it
    VICTIMS = "victims"  # all of it and the groups holding it: preemption was weighed


@dataclass(frozen=True, slots=True)
class KeptVerdict:
    """A waiting gang's verdict, kept with what could change it (`cycle.memo`)."""

    verdict: Verdict
    decided_at: float  # the safety flush counts from here
    as_of: int  # `Marks.count` when it was decided
    own: object  # the gang's own inputs then: its record, its pods (`memo.own_inputs`)
    priority: int
    devices: int  # the device book's version then
    reads: Reads
    nodes: npt.NDArray[np.bool_] | None = None  # Reads.NODES: which nodes


@dataclass(frozen=True, slots=True)
class Carried:
    """What a cycle hands to the next one besides the cluster's state: the engine
    returns it instead of keeping it, and its caller gives it to the next cycle on the
    same state, so a replay that hands it on the same way decides (and warns) the same.

    `quiet`: groups found with nothing to do or write; a later cycle skips them while
    they do not change (their count in `ClusterState.changed` stays at most `as_of`,
    the state's count when they were found), instead of deriving again, for each of
    thousands of running gangs, the status they already have. `told`: the notices
    already given that still stand (a notice is given again only once it stopped
    standing). `kept`: the verdicts of waiting gangs, each with what could change it, so
    that a later cycle decides again only those whose inputs changed (`cycle.memo`)."""

    quiet: frozenset[GroupKey] = frozenset()
    as_of: int = field(default=0, compare=False)  # counts the state's events, not decisions
    told: frozenset[Notice] = frozenset()
    kept: Mapping[GroupKey, KeptVerdict] = field(default_factory=dict, compare=False)
    # the queue and what the kept verdicts read, as the cycle keeps them (`cycle.backlog`)
    backlog: object = field(default=None, compare=False)

    def still_quiet(self, changed: dict[GroupKey, int]) -> set[GroupKey]:
        """The quiet groups that did not change since (`changed`: the state's counts,
        the most recent last, so only the changes since are walked)."""
        quiet = set(self.quiet)
        if quiet:
            for key, count in reversed(changed.items()):
                if count <= self.as_of:
                    break
                quiet.discard(key)
        return quiet


NOTHING_CARRIED = Carried()  # the first cycle's, and a replay's after each start


@dataclass(frozen=True, slots=True)
class CycleResult:
    """Everything one call of `schedule` decided, and what it hands to the next."""

    admissions: tuple[Admission, ...] = ()
    growths: tuple[Growth, ...] = ()
    verdicts: Mapping[GroupKey, Verdict] = field(default_factory=dict)
    plan: Plan = field(default_factory=Plan)  # what the operator carries out, in order
    carried: Carried = field(default_factory=Carried)
