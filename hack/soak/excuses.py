"""When a partial gang is Muster's to mend: the time its grace counts.

The partial-gang rule (tests/e2e/support/ledger.py) gives a gang GRACE seconds to rise
whole or to fall whole. The e2e suite can take that literally, since nothing there
stops the operator from acting. The soak does stop it, and while it is stopped no
client could mend a gang left part-way, however it was written:

- **no replica can write**: the leader's link is cut, the API server or etcd is
  restarting, the operator is throttled to no seats, or the leader is killed, frozen
  or stopped. A release or a preemption under way when such a fault strikes is left
  part-way: the API server has no request that releases or evicts several pods at
  once, and kube-scheduler binds each released pod at once. The fault suite meets the
  same limit and holds such pods with a gate of its own
  (tests/e2e/faults/test_operator_killed.py). Until some replica leads again (a Lease
  renewal lands after the fault ended: the Lease's fencing keeps a standby out until
  the leader's Lease expires), nobody can finish the work. A fault of this kind
  excuses every gang from its start to that renewal.
- **every node is NotReady** (`nodes-silent`): each node is tainted
  `unreachable:NoSchedule`, so no pod can be placed until one is Ready again, and a
  gang short of members cannot rise. Muster could take a falling gang down whole, but
  does not take running members down because their nodes stopped heartbeating: the
  node lifecycle controller too gives pods on unreachable nodes 300 s. Such a span
  excuses every gang.
- **the Job has not replaced a member the soak deleted**: the Job controller creates
  the replacement only after its pod failure backoff (10 s for a first failure,
  doubling), and the gang cannot be whole again before a pod exists to place. Such a
  deletion excuses its gang from the deletion to the first member that appears after it.

A partial gang is a violation when the time of its span *not* excused is longer than
the grace. The excused ones are not hidden: the report lists each with its span, the
time counted and what excused the rest, so a reader sees what an independent watch
with no excuses would see.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from hack.soak.judge import Violation

# Faults during which no replica can write, until some replica leads again.
BLACKOUT_KINDS = frozenset(
    {
        "replica-sigkill",
        "replica-sigterm",
        "replica-sigstop",
        "kube-apiserver-restart",
        "etcd-restart",
        "proxy-cut",
        "apf-throttled",
    }
)


@dataclass(frozen=True)
class Excuse:
    """A span (seconds after the start) in which Muster could not mend `gang` (None:
    any gang), and why."""

    start: float
    end: float
    why: str
    gang: str | None = None


@dataclass(frozen=True)
class Span:
    """A partial gang as the rule saw it: from `start` to `end` (seconds after the start)."""

    gang: str
    start: float
    end: float
    detail: str


def covering(span: Span, excuses: Iterable[Excuse]) -> list[Excuse]:
    """The excuses for the span's gang that overlap it, in order."""
    return sorted(
        (
            e
            for e in excuses
            if e.gang in (None, span.gang) and e.start < span.end and e.end > span.start
        ),
        key=lambda e: e.start,
    )


def counted(span: Span, excuses: Iterable[Excuse]) -> float:
    """Seconds of the span that no excuse for its gang covers."""
    covered = sorted(
        (max(e.start, span.start), min(e.end, span.end)) for e in covering(span, excuses)
    )
    total, reach = 0.0, span.start
    for start, end in covered:
        total += max(0.0, start - reach)
        reach = max(reach, end)
    return total + max(0.0, span.end - reach)


def reasons(span: Span, excuses: Iterable[Excuse]) -> list[str]:
    """What excused parts of the span, in order."""
    return [f"{e.why} (+{e.start:.1f}s to +{e.end:.1f}s)" for e in covering(span, excuses)]


def replacement_waits(
    deletions: Iterable[tuple[float, str]],
    arrivals: Mapping[str, Sequence[float]],
    end: float,
) -> list[Excuse]:
    """For each member the soak deleted (moment, gang), the wait until the gang's next
    member appeared (`arrivals`: moments each gang's pods were first seen), or the end."""
    waits = []
    for at, gang in deletions:
        later = [moment for moment in arrivals.get(gang, ()) if moment > at]
        waits.append(
            Excuse(at, min(later, default=end), "its Job had not replaced a deleted member", gang)
        )
    return waits


@dataclass(frozen=True)
class Excused:
    """A partial gang the grace forgave once its excused time was taken out."""

    span: Span
    counted: float
    reasons: tuple[str, ...]


def judge_partials(
    spans: Iterable[Span], excuses: Sequence[Excuse], grace: float
) -> tuple[list[Violation], list[Excused]]:
    """Partial gangs whose time not excused exceeds the grace (violations), and the rest."""
    violations, excused = [], []
    for span in spans:
        time = counted(span, excuses)
        if time > grace:
            why = "; ".join(reasons(span, excuses))
            note = f" (counted {time:.1f}s of {span.end - span.start:.1f}s; excused: {why})"
            detail = span.detail + (note if why else "")
            violations.append(Violation("partial-gang", span.start, span.gang, detail))
        else:
            excused.append(Excused(span, round(time, 2), tuple(reasons(span, excuses))))
    return violations, excused
