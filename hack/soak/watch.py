"""The soak's independent watcher: the e2e gang observer's own watch of `muster-soak`'s pods
(tests/e2e/support/observer.py: list, then watch, resumed or relisted through restarts of
the API server and etcd), each pod it delivers also judged for over-commit and pins
(`hack/soak/judge.py`). It shares nothing with the operator's informers or decisions
(only the parsing of a quantity).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.e2e.support.harness import pinned_to
from tests.e2e.support.ledger import FINISHED, Rise
from tests.e2e.support.observer import GangObserver, gang_of

from hack.soak.excuses import Span
from hack.soak.judge import PlacementJudge, Violation, allocatable_of, requests_of

# A gang may take this long to rise whole, or to fall whole (bind and delete spreads
# stretch under faults: a kube-scheduler restart stops binds for seconds).
GRACE_SECONDS = 10.0


class SoakObserver(GangObserver):
    """A GangObserver that also feeds every pod observation to a PlacementJudge."""

    def __init__(self, kubeconfig: Path, namespace: str, nodes: list[dict[str, Any]], start: float):
        self.placement = PlacementJudge()
        for node in nodes:
            self.placement.node(node["metadata"]["name"], allocatable_of(node))
        self.start_time = start  # monotonic moment of the soak's start
        self.found: list[Violation] = []
        self.arrivals: dict[str, list[float]] = {}  # gang -> when each member was first seen
        self._seen: set[str] = set()
        super().__init__(kubeconfig, namespace, grace=GRACE_SECONDS)

    def _apply(self, kind: str, pod: dict[str, Any], at: float) -> None:
        super()._apply(kind, pod, at)
        name = pod["metadata"]["name"]
        since = round(at - self.start_time, 2)
        gang = gang_of(pod)
        if kind != "DELETED" and gang is not None and name not in self._seen:
            self._seen.add(name)
            self.arrivals.setdefault(gang, []).append(since)
        if kind == "DELETED":
            self.found += self.placement.gone(name, since)
            return
        self.found += self.placement.pod(
            name,
            node=pod.get("spec", {}).get("nodeName"),
            pinned=pinned_to(pod),
            finished=pod.get("status", {}).get("phase") in FINISHED,
            requests=requests_of(pod),
            at=since,
        )

    def releases(self) -> list[float]:
        """When gangs rose whole, seconds after the start."""
        with self._lock:
            risen: list[Rise] = list(self.ledger.risen)
        return sorted(r.reached - self.start_time for r in risen if r.reached is not None)

    def partial_spans(self) -> list[Span]:
        """Every partial gang by the observer's rule, from its start to its end (or now)."""
        now = time.monotonic()
        with self._lock:
            verdicts = self.ledger.violations(now)
        return [
            Span(
                v.gang,
                round(v.started - self.start_time, 2),
                round(v.ended_at(now) - self.start_time, 2),
                v.describe(self.ledger.grace),
            )
            for v in verdicts
        ]

    def verdicts(self) -> list[Violation]:
        """What else the watch found: placement, and anything that kept it from seeing."""
        with self._lock:
            placement = list(self.found)
        blind = [Violation("unobserved", 0.0, self.namespace, error) for error in self.errors]
        return sorted([*placement, *blind], key=lambda v: v.at)
