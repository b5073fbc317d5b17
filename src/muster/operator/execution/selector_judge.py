"""DRA selectors judged in a process of their own, each evaluation within a time budget.

The engine never evaluates a CEL selector: it reads judgements (`DeviceBook.judged`),
and a claim whose cases are not judged yet waits for them. They are made here.
Before each cycle the loop says which cases the claims need (`want`, from
`DeviceBook.unjudged`); they are evaluated one at a time in a child process
(`judge`, under the cost limit, `selector_cost`), each given at most `TIME_BUDGET`
seconds of wall-clock time, after which the child is killed and the case judged
over budget; each judgement goes back through the cache (traced, so that a replay
decides on the same ones) and starts a cycle. An evaluation never holds the event
loop that renews the Lease, nor its interpreter lock: cel-python holds the
interpreter it runs on for as long as it evaluates.

The cases are taken in turn per expression (round-robin), so that an expression
needed on many kinds of device waits behind the first case of every other one: a
tenant's costly selector delays another team's cheap one by one evaluation at most.
Once an expression is over budget on one kind, its claims wait, and it is judged on
no other.

The child is spawned, not forked: it needs nothing of the operator's memory, only
the cases it is sent (an expression and a kind of device, pickled), so it starts as
a fresh interpreter, once, and again after it was killed; its budget starts only
once it has said it is ready (importing the engine takes a second or two).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections.abc import Callable, Iterable
from multiprocessing.connection import Connection

from muster.scheduler import COST_LIMIT, TIME_BUDGET, Case, Judgement, judge

logger = logging.getLogger(__name__)

START_TIMEOUT = 60.0  # seconds a fresh child may take to import the engine
RETRY_DELAY = 5.0  # after a child that did not start
READY = "ready"
_SPAWN = multiprocessing.get_context("spawn")

Deliver = Callable[[dict[Case, Judgement]], None]


class ChildNotReadyError(RuntimeError):
    """The judging process did not start."""


class _Child:
    """One judging process, and its end of the pipe; every method blocks."""

    def __init__(self, limit: int) -> None:
        self.connection, theirs = _SPAWN.Pipe()
        self.process = _SPAWN.Process(
            target=serve, args=(theirs, limit), name="muster-selectors", daemon=True
        )
        self.process.start()
        theirs.close()

    def ready(self, timeout: float) -> bool:
        try:
            return self.connection.poll(timeout) and self.connection.recv() == READY
        except (EOFError, OSError):
            return False

    def ask(self, case: Case, budget: float) -> Judgement | None:
        """The case's judgement, or None when none came within the budget (or the
        child died)."""
        try:
            self.connection.send(case)
            if not self.connection.poll(budget):
                return None
            answer: Judgement = self.connection.recv()
            return answer
        except (EOFError, OSError):
            return None

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.connection.close()


def serve(connection: Connection, limit: int) -> None:
    """The child: judge each case it is sent, under the cost limit, until the pipe
    closes."""
    connection.send(READY)
    while True:
        try:
            case = connection.recv()
        except EOFError:
            return
        connection.send(judge(case, limit))


class SelectorJudge:
    """Judges the cases the claims need, one at a time, beside the scheduling loop."""

    def __init__(
        self, deliver: Deliver, *, budget: float = TIME_BUDGET, limit: int = COST_LIMIT
    ) -> None:
        """`deliver` takes each judgement (to the state); `budget` is the wall-clock
        seconds one evaluation may take, `limit` its cost limit (the engine's, which
        offline commands judge by too: another only to test the budget)."""
        self.deliver = deliver
        self.budget = budget
        self.limit = limit
        self._queue: dict[str, list[Case]] = {}  # per expression, in the order wanted
        self._wanted = asyncio.Event()
        self._judging: Case | None = None
        self._child: _Child | None = None

    def want(self, cases: Iterable[Case]) -> None:
        """The cases the claims need now, in place of those wanted before: a case no
        claim needs any more is not judged."""
        queue: dict[str, list[Case]] = {}
        for case in cases:
            if case != self._judging:
                queue.setdefault(case[0], []).append(case)
        self._queue = queue
        if queue:
            self._wanted.set()

    def next_case(self) -> Case | None:
        """The first case of the expression whose turn it is (it goes to the back)."""
        if not self._queue:
            return None
        expression = next(iter(self._queue))
        first, *rest = self._queue.pop(expression)
        if rest:
            self._queue[expression] = rest
        return first

    async def run(self) -> None:
        """Judge what is wanted, for ever (until cancelled)."""
        try:
            while True:
                await self._wanted.wait()
                case = self.next_case()
                if case is None:
                    self._wanted.clear()
                    continue
                self._judging = case
                try:
                    judgement = await self._judge(case)
                except ChildNotReadyError:
                    logger.exception("the CEL selector process did not start; retrying")
                    await asyncio.sleep(RETRY_DELAY)
                    continue
                finally:
                    self._judging = None
                if judgement.stops:
                    self._queue.pop(case[0], None)
                self.deliver({case: judgement})
        finally:
            self._stop_child()

    async def _judge(self, case: Case) -> Judgement:
        child = self._child
        if child is None:
            child = _Child(self.limit)
            if not await asyncio.to_thread(child.ready, START_TIMEOUT):
                await asyncio.to_thread(child.stop)
                raise ChildNotReadyError("no answer from the CEL selector process")
            self._child = child
        answer = await asyncio.to_thread(child.ask, case, self.budget)
        if answer is None:
            self._stop_child()
            logger.warning(
                "a CEL selector was not judged within %gs; judged over budget: %.200s",
                self.budget,
                case[0],
            )
            return Judgement.OVER_TIME
        return answer

    def _stop_child(self) -> None:
        if self._child is not None:
            self._child.stop()
            self._child = None
