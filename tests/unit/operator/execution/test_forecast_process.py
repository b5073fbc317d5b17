"""A forecast in a forked child: the same estimates as in the operator's process, the
state as it was at the fork, and a child that dies or hangs is an error, not a wait."""

from __future__ import annotations

import time
from typing import Any

import pytest

from muster.operator.execution import forecast_process
from muster.operator.execution.forecast_process import (
    WALL_FACTOR,
    Budget,
    Child,
    ForecastFailedError,
    Request,
    forecast_elsewhere,
)
from muster.scheduler import ClusterState, EngineConfig
from muster.scheduler.forecast.estimate_book import describe, topology_keys
from muster.scheduler.forecast.forecast import Forecast, forecast
from tests.unit.scheduler.builders import cluster, gang, node
from tests.unit.scheduler.forecast.test_forecast import T0, key, running

CONFIG = EngineConfig()


def _state() -> ClusterState:
    return cluster(
        node("gpu", gpu="4"),
        *running("a", 4, ["gpu"], runtime="60s", gpu="1"),
        *gang("b", 4, gpu="1", created="2026-01-01T00:00:05Z"),
    )


async def test_the_child_tells_what_a_forecast_in_the_process_would() -> None:
    state = _state()
    here = forecast(state, now=T0 + 10, config=CONFIG)
    told = await forecast_elsewhere(state, Request(T0 + 10, CONFIG, 86400, 5))
    assert told.forecast.estimates == here.estimates
    assert told.words == describe(here, topology_keys(state))
    assert told.forecast.estimates[key("b")].start == T0 + 60


def test_the_child_forecasts_the_state_as_it_was_when_it_was_forked() -> None:
    state = _state()
    child = Child(state, Request(T0 + 10, CONFIG, 86400, 5))
    state.delete("PodGroup", "default", "b")  # after the fork: the child never sees it
    assert child.answer().forecast.estimates[key("b")].start == T0 + 60


def test_a_child_that_fails_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*args: Any, **kwargs: Any) -> Forecast:
        raise RuntimeError("the engine failed")

    monkeypatch.setattr(forecast_process, "run_forecast", failing)  # the child inherits it
    child = Child(_state(), Request(T0, CONFIG, 86400, 5))
    with pytest.raises(ForecastFailedError, match="ended without an answer"):
        child.answer()
    assert not child._process.is_alive()


def test_a_child_that_does_not_answer_in_time_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    def hanging(*args: Any, **kwargs: Any) -> Forecast:
        time.sleep(60)
        raise AssertionError("killed before")

    monkeypatch.setattr(forecast_process, "run_forecast", hanging)
    child = Child(_state(), Request(T0, CONFIG, 86400, 0.02))
    with pytest.raises(ForecastFailedError, match="no forecast within"):
        child.answer()
    assert not child._process.is_alive()


class Clock:
    """A clock that moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_budget_counts_the_cpu_time_the_process_had() -> None:
    cpu, wall = Clock(), Clock()
    budget = Budget(5, cpu_clock=cpu, wall_clock=wall)
    wall.now += 10  # waiting is not spending
    assert budget()
    cpu.now += 4.9
    assert budget()
    cpu.now += 0.1
    assert not budget()


def test_a_child_starved_of_cpu_stops_after_a_multiple_of_its_budget() -> None:
    cpu, wall = Clock(), Clock()
    budget = Budget(5, cpu_clock=cpu, wall_clock=wall)
    cpu.now += 1
    wall.now += 5 * WALL_FACTOR - 0.1
    assert budget()
    wall.now += 0.1
    assert not budget()
