"""How a victim gang leaves: once it falls below minCount, it must be gone entirely.

The gang observer (tests/e2e/observer.py) judges rises only: a fall is part of a
gang leaving, whatever its order. A victim whose evictions were refused part-way,
though, stays fallen: 3 of its 4 pods still running, which is the partial gang a
preemption must never leave. `Falls` is that rule, for the gangs a test names:

    once a whole gang falls below minCount, it must fall to 0 bound within GRACE
    seconds (the observer's grace for a rise, for the same reason: its pods are
    taken down together, but one request at a time).

`watching_falls` feeds it from the observer's own watch of the namespace.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.observer import GRACE_SECONDS, GROUP_LABEL, GangObserver


@dataclass(frozen=True)
class Fall:
    gang: str
    lowest: int  # the fewest pods bound while below minCount and above 0
    seconds: float  # from below minCount to 0 bound (so far, if it has not ended)
    ended: bool


@dataclass
class Falls:
    """The rule on a stream of pod states; pure."""

    min_counts: dict[str, int]
    pods: dict[str, tuple[str | None, bool]] = field(default_factory=dict)  # pod -> gang, bound
    whole: set[str] = field(default_factory=set)
    falling: dict[str, tuple[float, int]] = field(default_factory=dict)  # since, lowest
    ended: list[Fall] = field(default_factory=list)

    def pod(self, name: str, gang: str | None, bound: bool, at: float) -> None:
        before = self.pods.get(name, (None, False))[0]
        self.pods[name] = (gang, bound)
        self._judge({before, gang}, at)

    def gone(self, name: str, at: float) -> None:
        before = self.pods.pop(name, (None, False))[0]
        self._judge({before}, at)

    def _judge(self, gangs: set[str | None], at: float) -> None:
        for gang in gangs:
            if gang is None or gang not in self.min_counts:
                continue
            count = sum(1 for g, bound in self.pods.values() if g == gang and bound)
            if count >= self.min_counts[gang]:
                self.whole.add(gang)
                self.falling.pop(gang, None)  # back to whole: not a fall that stuck
            elif count == 0:
                self.whole.discard(gang)
                if gang in self.falling:
                    since, lowest = self.falling.pop(gang)
                    self.ended.append(Fall(gang, lowest, at - since, ended=True))
            elif gang in self.whole:
                since, lowest = self.falling.get(gang, (at, count))
                self.falling[gang] = (since, min(lowest, count))

    def falls(self, now: float) -> list[Fall]:
        """Every fall so far, the ones still in progress included."""
        open_falls = [
            Fall(gang, lowest, now - since, ended=False)
            for gang, (since, lowest) in self.falling.items()
        ]
        return [*self.ended, *open_falls]

    def partial(self, now: float, grace: float = GRACE_SECONDS) -> list[Fall]:
        return [fall for fall in self.falls(now) if fall.seconds > grace]


class FallWatch(GangObserver):
    """The observer's watch, which also feeds a `Falls`."""

    def __init__(self, kubeconfig: Path, namespace: str, min_counts: dict[str, int]) -> None:
        super().__init__(kubeconfig, namespace)
        self.rule = Falls(min_counts)

    def _apply(self, kind: str, pod: dict[str, Any], at: float) -> None:
        super()._apply(kind, pod, at)
        name = pod["metadata"]["name"]
        if kind == "DELETED":
            self.rule.gone(name, at)
            return
        gang = (pod["metadata"].get("labels") or {}).get(GROUP_LABEL)
        self.rule.pod(name, gang, bool(pod.get("spec", {}).get("nodeName")), at)

    def partial(self, now: float) -> list[Fall]:
        with self._lock:
            return self.rule.partial(now)

    def falls(self, now: float) -> list[Fall]:
        with self._lock:
            return self.rule.falls(now)


@contextmanager
def watching_falls(
    kubeconfig: Path, namespace: str, min_counts: dict[str, int]
) -> Iterator[FallWatch]:
    watch = FallWatch(kubeconfig, namespace, min_counts)
    watch.start()
    try:
        yield watch
    finally:
        watch.stop()
