"""Which start-time estimates are worth writing, and which moves are worth an event.

Estimates change as time passes, so writing every new forecast would cost a status
write per waiting gang per forecast. The book remembers what was last told about
each gang and asks for a write only when its outcome or reason changes, when its
start moves by more than a quarter of its wait, or when the wait shown has shrunk by
more than a quarter (about 25 writes over a wait of a day). An event is asked for
only when the start itself moves by more than a quarter of the wait, not as time
passes. A gang told nothing yet is not written while it waits for its pods (its
condition says so) nor when it fits now (the next cycle admits it, and admission
clears the estimate): in a burst, that was a status write for a third of the gangs.
Pure: the operator feeds it forecasts and writes what it returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from muster.api.keys import GroupKey
from muster.api.podgroup import PodGroupStatus, StartEstimate
from muster.api.times import timestamp
from muster.scheduler.forecast.estimate_words import clock_time, starts_in, waiting_for
from muster.scheduler.forecast.forecast import WAITING_FOR_PODS, Estimate, Forecast, Outcome
from muster.scheduler.state.state import ClusterState

MOVED = 0.25
MIN_WAIT = 60.0  # below a minute, a move of seconds is not news
UNKNOWN_BASIS = "unknown"
BACKOFF_BASIS = "backoff"  # it starts when its backoff ends, a time the engine set
FITS_NOW = "fits now"


@dataclass(frozen=True, slots=True)
class Update:
    """The status fields to write for one gang, and the event to post, if any."""

    fields: dict[str, Any]
    moved: str | None


@dataclass(frozen=True, slots=True)
class _Told:
    outcome: Outcome
    start: float | None
    waiting_for: str
    shown_wait: float  # the wait the START column showed when written


class EstimateBook:
    def __init__(self) -> None:
        self.last: Forecast | None = None
        self.words: dict[GroupKey, str] = {}
        self.told: dict[GroupKey, _Told] = {}
        self.basis: object = None  # what the last forecast was run on (`forecast_due`)
        self.forecast_at = float("-inf")

    def forecast_due(self, state: ClusterState, *, now: float, interval: float) -> bool:
        """Whether to run a forecast now: only when what it depends on changed since the
        last one (pods, capacity taken, the waiting gangs, told cheaply) or the time it
        said its verdicts change by themselves has come (a gang whose pods have stopped
        arriving is told `never` then), and never within `interval` seconds of it. A
        forecast due is counted as run."""
        basis = (len(state.pods), int(state.taken.sum()), frozenset(state.unadmitted_gangs))
        revisit = None if self.last is None else self.last.revisit_at
        stale = basis != self.basis or (revisit is not None and revisit <= now)
        if not stale or now - self.forecast_at < interval:
            return False
        self.basis, self.forecast_at = basis, now
        return True

    def take(self, ahead: Forecast, words: Mapping[GroupKey, str]) -> None:
        """A new forecast, with what each waiting gang waits for (`describe`)."""
        self.last = ahead
        self.words = dict(words)
        self.told = {key: told for key, told in self.told.items() if key in ahead.estimates}

    def updates(self, now: float) -> dict[GroupKey, Update]:
        """What to write now, from the last forecast (counted as told)."""
        if self.last is None:
            return {}
        found = {
            key: self._update(key, estimate, now) for key, estimate in self.last.estimates.items()
        }
        return {key: update for key, update in found.items() if update is not None}

    def _update(self, key: GroupKey, estimate: Estimate, now: float) -> Update | None:
        assert self.last is not None
        words = self.words.get(key, "")
        wait = 0.0 if estimate.start is None else max(estimate.start - now, 0.0)
        before = self.told.get(key)
        if before is None and self._said_otherwise(estimate):
            return None
        moved = None
        if before is not None and before.outcome == estimate.outcome == Outcome.STARTS:
            assert before.start is not None and estimate.start is not None
            shift = estimate.start - before.start
            if abs(shift) > MOVED * max(before.start - self.last.now, MIN_WAIT):
                moved = (
                    f"expected start moved from {clock_time(before.start)} to "
                    f"{clock_time(estimate.start)}: {words}"
                )
            elif words == before.waiting_for and not _shrunk(before.shown_wait, wait):
                return None
        elif before is not None and (before.outcome, before.waiting_for) == (
            estimate.outcome,
            words,
        ):
            return None
        self.told[key] = _Told(estimate.outcome, estimate.start, words, wait)
        return Update(self._fields(estimate, words, now), moved)

    def _said_otherwise(self, estimate: Estimate) -> bool:
        """Whether the gang's condition, or its admission at the next cycle, tells it."""
        assert self.last is not None
        if estimate.outcome is Outcome.STARTS:
            return estimate.start is not None and estimate.start <= self.last.now
        return estimate.outcome is Outcome.UNKNOWN and estimate.why == WAITING_FOR_PODS

    def _fields(self, estimate: Estimate, words: str, now: float) -> dict[str, Any]:
        assert self.last is not None
        return PodGroupStatus(
            estimate=StartEstimate(
                start=starts_in(estimate, now, self.last.horizon - self.last.now + now),
                basis=_basis(estimate),
                waiting_for=words,
            ),
            estimated_start_time=None if estimate.start is None else timestamp(estimate.start),
        ).to_manifest()


def topology_keys(state: ClusterState) -> dict[GroupKey, str | None]:
    """The topology key of each waiting gang, for `describe`: read before a forecast
    that runs on the state itself changes it."""
    return {key: state.groups[key].topology_key for key in state.unadmitted_gangs}


def describe(ahead: Forecast, topology_keys: Mapping[GroupKey, str | None]) -> dict[GroupKey, str]:
    """What each waiting gang of a forecast waits for, in words; `topology_keys` of
    the waiting gangs. Worked out where the forecast ran, from its first cycle's
    verdicts, so that only the words travel, not the verdicts."""
    verdicts = ahead.first_cycle.verdicts
    return {
        key: waiting_for(estimate, verdicts.get(key), topology_keys.get(key))
        for key, estimate in ahead.estimates.items()
    }


def _basis(estimate: Estimate) -> str:
    if estimate.outcome is not Outcome.STARTS:
        return UNKNOWN_BASIS
    if estimate.backoff_until is not None:
        return BACKOFF_BASIS
    return FITS_NOW if estimate.basis is None else str(estimate.basis)


def _shrunk(shown: float, wait: float) -> bool:
    return shown >= MIN_WAIT and wait < (1 - MOVED) * shown
