"""The trace the operator records (`--record-trace`), replayed: the same decisions."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from muster.api.times import rfc3339
from muster.operator.execution.loop import SchedulingLoop
from muster.operator.execution.trace import TraceFile
from muster.operator.intake.cache import LiveCache
from muster.scheduler import EngineConfig
from muster.scheduler.devices.selectors import Case
from muster.scheduler.devices.selectors import judge as judge_case
from muster.simulation.replay import first_difference, read_trace, replay
from tests.unit.operator.execution.test_loop import (
    CREATED,
    Clock,
    loop_over,
    two_pod_loop,
    unusable_pod,
)
from tests.unit.scheduler.builders import gang, job, node, pod, pod_group
from tests.unit.scheduler.device_builders import (
    claim_template,
    device_class,
    from_template,
    request,
    resource_slice,
)

ENGINE = EngineConfig()


def recording_loop(trace: TraceFile) -> SchedulingLoop:
    return loop_over(LiveCache(record=trace.write), record=trace.write)


async def record_a_preemption(path: Path) -> None:
    """A gang preempts a plain pod, waits for it to leave, is released, binds."""
    trace = TraceFile(path, ENGINE)
    loop = recording_loop(trace)
    cache = loop.cache
    cache.nodes.upsert(node("n1", cpu="4"))
    cache.pods.upsert(pod("batch-0", namespace="other", cpu="4", node_name="n1"))
    cache.pod_group_sink.upsert(pod_group("trainer", namespace="team", priority=1000))
    cache.pods.upsert(pod("trainer-0", group="trainer", namespace="team", cpu="4", priority=1000))
    await loop.cycle()  # preempts
    await loop.cycle()  # waits for its victim
    cache.pods.remove(pod("batch-0", namespace="other"))
    await loop.cycle()  # releases
    cache.pods.upsert(
        pod("trainer-0", group="trainer", namespace="team", node_name="n1", priority=1000)
    )
    await loop.cycle()  # complete
    trace.close()


async def test_every_cycle_the_loop_ran_replays_to_the_same_decisions(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    await record_a_preemption(path)

    lines = read_trace(path)
    assert lines[0]["line"] == "start"
    cycles = replay(lines)
    assert len(cycles) == 4
    assert first_difference(cycles) is None
    kinds = [[step["kind"] for step in cycle.replayed["steps"]] for cycle in cycles]
    assert kinds[0] == ["preempt"]
    assert "admit" not in kinds[1] and "grow" not in kinds[1]
    assert any(action.get("release") for action in cycles[2].replayed["steps"][0]["actions"])


async def test_a_refused_release_is_in_the_trace_and_replays_to_the_same_rollback(
    tmp_path: Path,
) -> None:
    path = tmp_path / "trace.jsonl"
    trace = TraceFile(path, ENGINE)
    loop, _, _ = two_pod_loop(record=trace.write)
    await loop.cycle()  # admits; one pod's release refused
    await loop.cycle()  # rolls back
    trace.close()

    lines = read_trace(path)
    refused = [line for line in lines if line["line"] == "release" and line["failure"]]
    assert [line["name"] for line in refused] == ["trainer-1"]
    cycles = replay(lines)
    assert first_difference(cycles) is None
    assert [step["kind"] for step in cycles[1].replayed["steps"]] == ["roll back"]
    without = [line for line in lines if line["line"] != "release"]
    assert first_difference(replay(without)) is not None  # the answer decided the rollback


async def test_a_replay_that_decides_otherwise_says_where(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    await record_a_preemption(path)
    lines = read_trace(path)
    cycle_lines = [line for line in lines if line["line"] == "cycle"]
    cycle_lines[1]["decisions"]["wakeAt"] = 0.0

    difference = first_difference(replay(lines))

    assert difference is not None
    assert difference.startswith("cycle 2 ")
    assert "wakeAt" in difference and "steps" not in difference


async def test_a_line_still_being_written_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    await record_a_preemption(path)
    whole = read_trace(path)
    with path.open("a") as file:
        file.write(json.dumps({"line": "cycle"})[:7])

    assert read_trace(path) == whole


async def test_letting_go_the_pods_of_a_job_whose_field_was_dropped_replays(
    tmp_path: Path,
) -> None:
    path = tmp_path / "trace.jsonl"
    trace = TraceFile(path, ENGINE)
    loop = recording_loop(trace)
    loop.cache.jobs.upsert(job("plain", gated_for_field=False))
    loop.cache.jobs.upsert(job("train"))
    loop.cache.pods.upsert(pod("train-0", group="train"))
    await loop.cycle()
    trace.close()

    lines = read_trace(path)
    assert [line["object"]["metadata"]["name"] for line in lines if line.get("kind") == "Job"] == [
        "train"
    ]
    (cycle,) = replay(lines)
    assert first_difference([cycle]) is None
    (step,) = cycle.replayed["steps"]
    assert step["kind"] == "let go"
    assert step["actions"][0] == {"ungate": ["default/train-0"]}
    assert step["actions"][1]["jobEvent"] == "default/train"


async def test_the_warnings_a_loop_gave_replay_to_the_same_warnings(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    config = EngineConfig(orphan_grace=10.0)
    trace = TraceFile(path, config)
    clock = Clock(CREATED)
    loop = loop_over(LiveCache(record=trace.write), record=trace.write, engine_config=config)
    loop.clock = clock
    orphan = pod("waiting-0", group="missing", namespace="team")
    orphan["metadata"]["creationTimestamp"] = rfc3339(CREATED)
    loop.cache.pods.upsert(orphan)
    loop.cache.pods.upsert(unusable_pod("1"))
    for moment in (0.0, 5.0, 10.0, 20.0):
        clock.now = CREATED + moment
        await loop.cycle()
    loop.cache.pods.upsert(unusable_pod("2"))
    await loop.cycle()
    trace.close()

    cycles = replay(read_trace(path))
    assert first_difference(cycles) is None
    told = [[notice["reason"] for notice in cycle.replayed["notices"]] for cycle in cycles]
    assert told == [["IgnoredByScheduler"], [], ["PodGroupNotFound"], [], ["IgnoredByScheduler"]]
    assert cycles[0].replayed["wakeAt"] == CREATED + 10.0
    given = [reason for _, reason, _ in loop.events.recorded]  # type: ignore[attr-defined]
    assert given == ["IgnoredByScheduler", "PodGroupNotFound", "IgnoredByScheduler"]


class WantedCases:
    """A selector judge that is never run: it keeps what the loop asked of it."""

    def __init__(self) -> None:
        self.wanted: list[list[Case]] = []

    def want(self, cases: Iterable[Case]) -> None:
        self.wanted.append(list(cases))


async def test_selector_judgements_are_in_the_trace_and_replay_to_the_same_admission(
    tmp_path: Path,
) -> None:
    """The loop asks for the claims' cases before its cycle; the judgements made
    beside it are traced, so a replay admits where the operator admitted."""
    path = tmp_path / "trace.jsonl"
    trace = TraceFile(path, ENGINE)
    cache = LiveCache(record=trace.write)
    judge = WantedCases()
    loop = loop_over(cache, record=trace.write, selectors=judge)  # type: ignore[arg-type]
    for obj in (
        node("n1"),
        device_class(),
        resource_slice("n1", 2),
        claim_template("gpus", request()),
        *gang("g", 2, spec=from_template("gpus")),
    ):
        if obj["kind"] == "PodGroup":
            cache.pod_group_sink.upsert(obj)
        else:
            cache.take_in(obj["kind"], obj)
    await loop.cycle()  # waits for its selectors
    (wanted,) = judge.wanted
    assert wanted and cache.judge_selectors({case: judge_case(case) for case in wanted})
    await loop.cycle()  # admits
    trace.close()

    lines = read_trace(path)
    cycles = replay(lines)
    assert first_difference(cycles) is None
    assert [step["kind"] for step in cycles[1].replayed["steps"]] == ["admit"]
    without = [line for line in lines if line["line"] != "judged"]
    assert first_difference(replay(without)) is not None
