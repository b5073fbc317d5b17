"""An event loop on a virtual clock, for tests of code that waits on timers.

Whenever every task waits and the next thing due is a timer, the clock jumps to that
timer instead of sleeping until it. A test then runs in no time, whatever the load
of the machine, and what it asserts about durations holds exactly: a retry comes
after its backoff, a deadline passes when the timers say so, not when the machine
happens to get round to it. `asyncio.sleep`, `asyncio.timeout` and `loop.time()`
all read the virtual clock; code that reads `time.monotonic()` itself takes the
loop's `time` as its clock in these tests.

Only for code that waits on timers and on other tasks: a wait for real I/O or a
thread with a timer pending would see the clock jump past it.
"""

from __future__ import annotations

import asyncio
import functools
import selectors
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec

P = ParamSpec("P")


class _JumpingSelector(selectors.DefaultSelector):
    """A selector that, with nothing ready, moves the clock by the timeout it was given."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:  # no timer at all: only I/O can wake the loop
            return super().select(None)
        self._loop.now += timeout
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose `time()` starts at 0 and moves only from timer to timer."""

    def __init__(self) -> None:
        self.now = 0.0
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self.now


def on_virtual_time(
    test: Callable[P, Coroutine[Any, Any, None]],
) -> Callable[P, None]:
    """Run an async test on a fresh `VirtualTimeLoop` of its own."""

    @functools.wraps(test)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
            runner.run(test(*args, **kwargs))

    return run
