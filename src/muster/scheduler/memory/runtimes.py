"""How long pods are expected to run, and how sure that is: the input of start-time
estimates.

Most specific first: a runtime declared by the user (the expected-runtime annotation,
on the PodGroup or the pod), then a deadline (`activeDeadlineSeconds`, an upper bound:
the pod is killed by then at the latest), then what earlier pods of the same group took,
then what the pods of the earlier Jobs of the same CronJob took. Anything else is
unknown, and a forecast never invents a number for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from statistics import median

from muster.api.constants import ACTIVE_DEADLINE_ANNOTATION, EXPECTED_RUNTIME_ANNOTATION
from muster.api.durations import parse_duration


class Basis(StrEnum):
    """Where a runtime comes from, weakest last (`weakest` relies on this order)."""

    DECLARED = "declared"
    OBSERVED = "observed"
    DEADLINE = "deadline"  # an upper bound


@dataclass(frozen=True, slots=True)
class Runtime:
    seconds: float
    basis: Basis

    def describe(self) -> str:
        """`2h, declared`; `at most 10m (activeDeadlineSeconds)`; `~90s, observed`."""
        length = format_duration(self.seconds)
        if self.basis is Basis.DEADLINE:
            return f"at most {length}, activeDeadlineSeconds"
        if self.basis is Basis.OBSERVED:
            return f"~{length}, observed"
        return f"{length}, declared"


def format_duration(seconds: float) -> str:
    """The shortest readable form: `45s`, `12m`, `2h`, `2h30m`."""
    whole = round(seconds)
    if whole < 120:
        return f"{whole}s"
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"{minutes}m"
    hours, rest = divmod(minutes, 60)
    return f"{hours}h{rest}m" if rest else f"{hours}h"


def runtime_from(annotations: Mapping[str, str], deadline: object = None) -> Runtime | None:
    """The runtime an object declares: its annotation, else its deadline (the
    annotation that carries a Job's, or a pod's own `activeDeadlineSeconds`).

    A malformed value declares nothing here: a Job's opt-in refuses one at admission,
    but a pod or a PodGroup that carries one must not stop its gang from scheduling.
    """
    declared = annotations.get(EXPECTED_RUNTIME_ANNOTATION)
    if declared is not None:
        seconds = parse_duration(declared)
        if seconds is not None:
            return Runtime(seconds, Basis.DECLARED)
    if deadline is None:
        deadline = annotations.get(ACTIVE_DEADLINE_ANNOTATION)
    try:
        bound = float(str(deadline)) if deadline is not None else 0.0
    except ValueError:
        bound = 0.0
    return Runtime(bound, Basis.DEADLINE) if bound > 0 else None


def observed(durations: Iterable[float]) -> Runtime | None:
    """The median of what earlier pods took, if any finished."""
    taken = [duration for duration in durations if duration > 0]
    return Runtime(median(taken), Basis.OBSERVED) if taken else None


def weakest(bases: Iterable[Basis]) -> Basis | None:
    """The least certain of several bases: an estimate is only as good as that."""
    order = list(Basis)
    found = [order.index(basis) for basis in bases]
    return order[max(found)] if found else None
