"""The start-time forecast of an input as a table and as JSON: running gangs, when
waiting ones start and end, and why the others have no time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from muster.api.constants import EXPECTED_RUNTIME_ANNOTATION
from muster.simulation.documents import Document
from muster.simulation.timeline import render_timeline, timeline, timeline_to_json
from tests.unit.scheduler.builders import Obj, node, pod, pod_group

NOW = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)


def gang(name: str, *, runtime: str | None, running_since: str | None = None) -> list[Obj]:
    """A gang of one pod asking the whole node; running when given its start."""
    group = pod_group(name, created="2026-01-01T09:00:00Z", admitted=running_since is not None)
    if runtime is not None:
        group["metadata"]["annotations"] = {EXPECTED_RUNTIME_ANNOTATION: runtime}
    member = pod(f"{name}-0", group=name, cpu="4")
    if running_since is not None:
        group["status"]["plan"] = {f"{name}-0": "n1"}
        group["status"]["admittedAt"] = running_since
        member = pod(f"{name}-0", group=name, cpu="4", node_name="n1", gated=False)
        member["status"] = {"phase": "Running", "startTime": running_since}
    return [group, member]


def documents(*objects: Obj) -> list[Document]:
    return [Document("cluster.yaml", index, obj) for index, obj in enumerate(objects, 1)]


def forecast_of(*objects: Obj) -> tuple[Any, dict[Any, str]]:
    result, words, warnings = timeline(documents(*objects), now=NOW, max_cycles=100)
    assert warnings == ()
    return result, words


def test_a_running_gang_then_the_one_waiting_for_its_node() -> None:
    result, words = forecast_of(
        node("n1", cpu="4"),
        *gang("first", runtime="1h", running_since="2026-01-01T09:30:00Z"),
        *gang("next", runtime="2h"),
    )
    header, first, second = render_timeline(result, words).splitlines()
    assert header.split() == ["NAMESPACE", "PODGROUP", "START", "END", "RUNTIME", "WAITING", "FOR"]
    assert first.split()[:6] == ["default", "first", "09:30:00", "(running)", "10:30:00", "(+30m)"]
    assert second.split()[:6] == ["default", "next", "10:30:00", "(+30m)", "12:30:00", "(+2h30m)"]
    entries = {entry["name"]: entry for entry in timeline_to_json(result, words)}
    assert entries["first"]["running"] and entries["first"]["basis"] == "declared"
    assert entries["next"]["start"] == "2026-01-01T10:30:00Z"
    assert entries["next"]["end"] == "2026-01-01T12:30:00Z"
    assert entries["next"]["outcome"] == "starts"
    assert entries["next"]["runtime"] == 7_200


def test_a_gang_waiting_on_a_pod_of_unknown_runtime_has_no_time_and_says_why() -> None:
    result, words = forecast_of(
        node("n1", cpu="4"),
        *gang("first", runtime=None, running_since="2026-01-01T09:30:00Z"),
        *gang("next", runtime="2h"),
    )
    _, first, waiting = render_timeline(result, words).splitlines()
    assert first.split()[4:6] == ["unknown", "unknown"]
    assert waiting.split()[:3] == ["default", "next", "unknown"]
    assert waiting.endswith("it waits on capacity taken by pods of unknown runtime: default/first")
    entries = {entry["name"]: entry for entry in timeline_to_json(result, words)}
    assert (entries["next"]["start"], entries["next"]["outcome"]) == (None, "unknown")
    assert entries["first"]["end"] is None


def test_an_input_without_gangs_says_so() -> None:
    result, words = forecast_of(node("n1"))
    assert render_timeline(result, words) == "No gangs in the input.\n"
    assert timeline_to_json(result, words) == []
