"""A start-time forecast in a process of its own, off the scheduling loop's interpreter.

A forecast is many engine cycles of CPU-bound Python. In a thread of the operator it
would hold the interpreter lock for half of every cycle the scheduling loop runs
beside it (measured: the cycle twice as slow), so it runs in a child process
instead, forked at the moment of the snapshot: the child's memory *is* the state as
it was between two events (copy-on-write: nothing is copied or pickled up front,
where pickling the default benchmark's 60,000 pods takes seconds of the loop's time,
and a fork some milliseconds), it runs the forecast on it in place, and sends back
only what the estimate writer needs: the estimates and their words.

The child is background work: it asks the kernel to run it only when a CPU is idle
(`SCHED_IDLE`; else at the lowest niceness). Its budget counts the CPU time it got,
not the time it waited, up to `WALL_FACTOR` times the budget in all, after which it
answers with the gangs it reached; the parent kills it if no answer came within twice
that (a child that hangs). It touches nothing but the engine, whose code is pure,
and leaves with `os._exit` (multiprocessing's fork start), so none of the parent's
threads, locks or sockets are used in it (Python 3.12 warns on every fork of a
process with threads, this one included).

What it still costs the operator: while a child lives, each page the operator writes
that the child still shares is copied first, so the first cycle after a fork is
dearer than the next ones (measured in `bench/engine/run.py`, see docs/performance.md),
and the child's memory grows with the pages the forecast itself writes, at most to
the operator's own size, for the seconds it lives.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar, overload

from muster.api.keys import GroupKey
from muster.scheduler import (
    ClusterState,
    EngineConfig,
    Forecast,
    Reach,
    describe,
    run_forecast,
    topology_keys,
)
from muster.scheduler.decisions import NOTHING_CARRIED, Carried, CycleResult

WALL_FACTOR = 10.0
_FORK = multiprocessing.get_context("fork")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Told:
    """What comes back from a forecast: its estimates (without the first cycle's
    verdicts or the timeline) and, per waiting gang, what it waits for in words."""

    forecast: Forecast
    words: dict[GroupKey, str]


@dataclass(frozen=True, slots=True)
class Request:
    """What a forecast is asked: from when, with which engine, how far ahead (seconds),
    on how many seconds of CPU time, and what the loop's last cycle handed on."""

    now: float
    config: EngineConfig
    horizon: float
    budget: float
    carried: Carried = NOTHING_CARRIED


class ForecastFailedError(RuntimeError):
    """The child ended without an answer, or took too long and was killed."""


class Budget:
    """`keep_going` for a forecast: true while the process has had less than `seconds`
    of CPU time, and less than `WALL_FACTOR` times that has passed (a child starved
    of CPU on a busy machine still answers, with the gangs it reached).

    The two clocks are the process's CPU time and the monotonic clock; a test gives
    clocks it moves itself."""

    def __init__(
        self,
        seconds: float,
        *,
        cpu_clock: Callable[[], float] = time.process_time,
        wall_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cpu_clock = cpu_clock
        self.wall_clock = wall_clock
        self.cpu_until = cpu_clock() + seconds
        self.wall_until = wall_clock() + seconds * WALL_FACTOR

    def __call__(self) -> bool:
        return self.cpu_clock() < self.cpu_until and self.wall_clock() < self.wall_until


Work = Callable[[ClusterState, Request], T]  # what the child does with its state


class Forked(Generic[T]):
    """One forecast running in a forked child; `answer` waits for it. `work` runs the
    forecast on the child's own state and says what to send back (by default the
    estimates and their words, `Child`; the dashboard sends its board)."""

    @overload
    def __init__(self: Forked[Told], state: ClusterState, request: Request) -> None: ...
    @overload
    def __init__(self, state: ClusterState, request: Request, work: Work[T]) -> None: ...
    def __init__(
        self, state: ClusterState, request: Request, work: Work[Any] | None = None
    ) -> None:
        self.wall = request.budget * WALL_FACTOR * 2  # its own limit, as long again for a cycle
        self._receive, send = _FORK.Pipe(duplex=False)
        self._process = _FORK.Process(
            target=_run,
            args=(send, state, request, work or told),
            name="muster-forecast",
            daemon=True,
        )
        self._process.start()  # the fork: the child's state is the state of this moment
        send.close()

    def answer(self) -> T:
        """The child's answer; blocks (without the interpreter lock while it waits), so
        the operator calls it in a thread. The child is reaped either way."""
        try:
            if not self._receive.poll(self.wall):
                raise ForecastFailedError(f"no forecast within {self.wall:.0f}s; stopped it")
            answer: T = self._receive.recv()
            return answer
        except EOFError:
            raise ForecastFailedError("the forecast process ended without an answer") from None
        finally:
            self._receive.close()
            self.kill()
            self._process.join()

    def kill(self) -> None:
        """Stop the child now, if it still runs (never blocks)."""
        if self._process.is_alive():
            self._process.kill()


Child = Forked[Told]  # the estimate writer's


@overload
async def forecast_elsewhere(state: ClusterState, request: Request) -> Told: ...
@overload
async def forecast_elsewhere(state: ClusterState, request: Request, work: Work[T]) -> T: ...
async def forecast_elsewhere(
    state: ClusterState, request: Request, work: Work[Any] | None = None
) -> Any:
    """A forecast of `state` as it is now, run in a child process (`work`, by default
    `told`); called on the event loop between two events, so the state it forks is
    consistent."""
    child: Forked[Any] = Forked(state, request, work or told)
    try:
        return await asyncio.to_thread(child.answer)
    except asyncio.CancelledError:
        child.kill()  # the thread then sees the end of the pipe, and reaps it
        raise


def _run(send: Connection, state: ClusterState, request: Request, work: Work[Any]) -> None:
    """The child: the work on its own copy of the state, then the answer."""
    _yield_to_others()
    send.send(work(state, request))
    send.close()


def told(state: ClusterState, request: Request) -> Told:
    """The estimate writer's forecast: the estimates and, per gang, their words."""
    spent = Budget(request.budget)
    topology = topology_keys(state)
    ahead = run_forecast(
        state,
        now=request.now,
        config=request.config,
        reach=Reach(request.horizon),
        keep_going=spent,
        owned=True,
        carried=request.carried,
    )
    lean = replace(ahead, first_cycle=CycleResult(), timeline=())
    return Told(lean, describe(ahead, topology))


def _yield_to_others() -> None:
    """Run only when a CPU would otherwise be idle."""
    if hasattr(os, "sched_setscheduler"):
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            return
    os.nice(19)
