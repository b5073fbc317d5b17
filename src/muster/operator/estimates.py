"""Start-time estimates for `status.estimatedStartTime` and `status.estimate`, on a budget.

A forecast runs the engine forward in time, so it costs many cycles: it runs only when
the cluster or the queue changed since the last one (pods, held capacity, waiting
gangs), and never more often than every `interval` seconds. Between forecasts the
START column is refreshed from the last one as time passes.

Writes are few: a gang's estimate is written when its outcome or reason changes, when
its start moves by more than a quarter of its wait, or when the wait shown has shrunk
by more than a quarter (about 25 writes over a wait of a day). An event is posted only
when the start itself moves by more than a quarter of the wait, not as time passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from muster.operator.writer import timestamp
from muster.scheduler import ClusterState, EngineConfig
from muster.scheduler.estimate_words import clock_time, starts_in, waiting_for
from muster.scheduler.forecast import Estimate, Forecast, Outcome, forecast
from muster.scheduler.results import GroupKey

MOVED = 0.25
MIN_WAIT = 60.0  # below a minute, a move of seconds is not news
UNKNOWN_BASIS = "unknown"


@dataclass(frozen=True, slots=True)
class Update:
    """The status fields to write for one gang, and the event to post, if any."""

    fields: dict[str, Any]
    moved: str | None


@dataclass(frozen=True, slots=True)
class _Written:
    outcome: Outcome
    start: float | None
    waiting_for: str
    shown_wait: float  # the wait the START column showed when written


class Estimates:
    def __init__(self, *, horizon: float, interval: float, config: EngineConfig) -> None:
        self.horizon = horizon
        self.interval = interval
        self.config = config
        self.last: Forecast | None = None
        self.last_at = float("-inf")
        self.fingerprint: object = None
        self.words: dict[GroupKey, str] = {}
        self.written: dict[GroupKey, _Written] = {}

    def updates(self, state: ClusterState, now: float) -> dict[GroupKey, Update]:
        """What to write now; a new forecast first when one is due."""
        fingerprint = _fingerprint(state)
        if fingerprint != self.fingerprint and now - self.last_at >= self.interval:
            self.last = forecast(state, now=now, config=self.config, horizon=self.horizon)
            self.last_at, self.fingerprint = now, fingerprint
            verdicts = self.last.first_cycle.verdicts
            self.words = {
                key: waiting_for(estimate, verdicts.get(key), state.groups[key].topology_key)
                for key, estimate in self.last.estimates.items()
            }
        if self.last is None:
            return {}
        self.written = {key: w for key, w in self.written.items() if key in self.last.estimates}
        found = {}
        for key, estimate in self.last.estimates.items():
            update = self._update(key, estimate, now)
            if update is not None:
                found[key] = update
        return found

    def _update(self, key: GroupKey, estimate: Estimate, now: float) -> Update | None:
        assert self.last is not None
        words = self.words.get(key, "")
        wait = 0.0 if estimate.start is None else max(estimate.start - now, 0.0)
        before = self.written.get(key)
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
        self.written[key] = _Written(estimate.outcome, estimate.start, words, wait)
        return Update(self._fields(estimate, words, now), moved)

    def _fields(self, estimate: Estimate, words: str, now: float) -> dict[str, Any]:
        assert self.last is not None
        basis = UNKNOWN_BASIS if estimate.outcome is not Outcome.STARTS else estimate.basis
        fields: dict[str, Any] = {
            "estimate": {
                "start": starts_in(estimate, now, self.last.horizon - self.last.now + now),
                "basis": str(basis) if basis is not None else "fits now",
                "waitingFor": words,
            }
        }
        if estimate.start is not None:
            fields["estimatedStartTime"] = timestamp(estimate.start)
        return fields


def _shrunk(shown: float, wait: float) -> bool:
    return shown >= MIN_WAIT and wait < (1 - MOVED) * shown


def _fingerprint(state: ClusterState) -> object:
    """What a forecast depends on, cheaply: pods, capacity held, the waiting gangs."""
    return (len(state.pods), int(state.held.sum()), frozenset(state.unadmitted_gangs))
