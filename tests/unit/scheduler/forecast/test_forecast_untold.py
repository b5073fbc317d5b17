"""A forecast plans no statuses after its first cycle (`schedule(told=False)`): its
estimates are those of a forecast whose every cycle plans them (hypothesis)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import CycleResult
from muster.scheduler.forecast import forecast as forecast_module
from muster.scheduler.forecast.forecast import Forecast, forecast
from muster.scheduler.state.state import ClusterState
from tests.unit.scheduler.builders import Obj, cluster, gang, node
from tests.unit.scheduler.forecast.test_forecast import T0, running

CONFIG = EngineConfig(starvation_seconds=120.0)


@st.composite
def backlogs(draw: st.DrawFn) -> list[Obj]:
    """A few nodes, gangs running for declared times, and gangs waiting behind them,
    many of one kind."""
    sizes = draw(st.lists(st.integers(2, 4), min_size=2, max_size=4))
    names = [f"n{index}" for index in range(len(sizes))]
    objects = [node(name, cpu=str(cpu)) for name, cpu in zip(names, sizes, strict=True)]
    for index in range(draw(st.integers(1, 3))):
        runtime = f"{draw(st.integers(1, 20)) * 30}s"
        objects += running(f"run{index}", 1, [names[index % len(names)]], runtime=runtime, cpu="2")
    for index in range(draw(st.integers(1, 8))):
        size = draw(st.sampled_from([1, 2, 2, 2, 3]))
        minute = draw(st.integers(0, 4))
        priority = draw(st.sampled_from([0, 0, 0, 5]))
        waiting = gang(f"w{index}", size, cpu="2", created=f"2026-01-01T00:0{minute}:00Z")
        waiting[0]["spec"]["priority"] = priority
        objects += waiting
    return objects


def fully_told(monkeypatch: pytest.MonkeyPatch, state: ClusterState) -> Forecast:
    def told_always(*args: Any, **kwargs: Any) -> CycleResult:
        kwargs["told"] = True
        return schedule(*args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(forecast_module, "schedule", told_always)
        return forecast(state, now=T0 + 10, config=CONFIG)


@settings(max_examples=150)
@given(objects=backlogs())
def test_a_forecast_untold_after_its_first_cycle_estimates_as_one_told_throughout(
    objects: list[Obj],
) -> None:
    monkeypatch = pytest.MonkeyPatch()
    untold = forecast(cluster(*objects), now=T0 + 10, config=CONFIG)
    told = fully_told(monkeypatch, cluster(*objects))
    assert untold.estimates == told.estimates
    assert untold.timeline == told.timeline
    assert untold.cycles == told.cycles
