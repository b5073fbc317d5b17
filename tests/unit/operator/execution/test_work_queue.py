import asyncio

from muster.operator.execution.work_queue import WorkQueue


async def test_a_key_added_while_it_waits_waits_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for key in ("a", "b", "a", "a", "b"):
        queue.add(key)
    assert len(queue) == 2
    assert [await queue.take(), await queue.take()] == ["a", "b"]
    assert len(queue) == 0


async def test_a_key_added_while_worked_on_is_taken_again_only_once_its_work_is_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    key = await queue.take()
    queue.add("a")
    queue.add("a")
    second = asyncio.create_task(queue.take())
    await asyncio.sleep(0)
    assert not second.done()  # no second worker on the same key
    queue.done(key)
    assert await asyncio.wait_for(second, 1) == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_a_key_done_without_being_added_again_is_not_taken_again() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.done(await queue.take())
    queue.add("b")
    assert await queue.take() == "b"
