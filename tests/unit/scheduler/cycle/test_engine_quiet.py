"""Running gangs with nothing to do are skipped by later cycles until they change."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from muster.api.keys import GroupKey
from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.decisions.results import NOTHING_CARRIED, Carried
from muster.scheduler.lifecycle.status import PROGRESS_GRACE
from tests.unit.scheduler.builders import node, pod, pod_group

NOW = 1_000_000.0
CONFIG = EngineConfig()
KEY = GroupKey("default", "train")


def running_gang() -> tuple[ClusterState, dict[str, Any], list[dict[str, Any]]]:
    group = pod_group("train", min_count=2)
    pods = [
        pod(f"train-{i}", group="train", node_name="n1", gated=False, phase="Running")
        for i in range(2)
    ]
    group["status"] = {
        "conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}],
        "plan": {"train-0": "n1", "train-1": "n1"},
        "admittedAt": "1970-01-01T00:00:00Z",
    }
    state = ClusterState()
    state.apply("Node", node("n1", cpu="4"))
    for obj in pods:
        state.apply("Pod", obj)
    state.apply("PodGroup", group)
    return state, group, pods


def written(state: ClusterState, group: dict[str, Any]) -> dict[str, Any]:
    """Carry the cycle's status for the group out, as the operator's writer would."""
    result = schedule(state, now=NOW, config=CONFIG)
    updated = {**group, "status": result.plan.statuses[KEY]}
    state.apply("PodGroup", updated)
    return updated


def steps_for_train(state: ClusterState, carried: Carried) -> tuple[list[str], Carried]:
    """The group's steps in a cycle handed `carried`, and what that cycle hands on."""
    result = schedule(state, now=NOW, config=CONFIG, carried=carried)
    return [str(step.kind) for step in result.plan.steps if step.group == KEY], result.carried


def test_a_settled_gang_is_skipped_until_one_of_its_pods_changes() -> None:
    state, group, pods = running_gang()
    written(state, group)
    steps, carried = steps_for_train(state, NOTHING_CARRIED)
    assert steps == []  # nothing to write, so no step: handed on as quiet
    assert KEY in carried.still_quiet(state.changed)
    steps, carried = steps_for_train(state, carried)
    assert steps == []
    assert KEY in carried.quiet
    state.apply("Pod", {**pods[0], "status": {"phase": "Failed"}})
    assert KEY not in carried.still_quiet(state.changed)
    steps, _ = steps_for_train(state, carried)
    assert steps


def test_a_skipped_cycle_decides_what_a_fresh_state_decides() -> None:
    state, group, _ = running_gang()
    written(state, group)
    carried = schedule(state, now=NOW, config=CONFIG).carried
    skipped = schedule(state, now=NOW, config=CONFIG, carried=carried)
    full = schedule(state, now=NOW, config=CONFIG)
    assert skipped.admissions == full.admissions and skipped.verdicts == full.verdicts
    assert [step for step in full.plan.steps if step.group != KEY] == list(skipped.plan.steps)
    assert not [step for step in full.plan.steps if step.group == KEY]  # nothing to write


def test_waiting_gangs_whose_status_is_written_cost_no_step_in_later_cycles() -> None:
    """Gangs that wait, unmoved for longer than their progress grace, with their verdict
    written: every later cycle decides the same status, which the operator would only
    read their PodGroups to find written already, so the plan leaves them out."""
    waited = datetime(2026, 1, 1, tzinfo=UTC).timestamp() + PROGRESS_GRACE + 60
    state = ClusterState()
    state.apply("Node", node("n1", cpu="4"))
    groups = [pod_group(f"g{index}", min_count=2) for index in range(3)]
    for group in groups:
        name = group["metadata"]["name"]
        for member in range(2):
            state.apply("Pod", pod(f"{name}-{member}", group=name, cpu="8"))
        state.apply("PodGroup", group)
    first = schedule(state, now=waited, config=CONFIG)
    assert len(first.plan.steps) == 3 and not first.admissions
    for group in groups:
        key = GroupKey("default", group["metadata"]["name"])
        metadata = {**group["metadata"], "resourceVersion": "100"}
        state.apply("PodGroup", {**group, "metadata": metadata, "status": first.plan.statuses[key]})
    later = schedule(state, now=waited + 1, config=CONFIG, carried=first.carried)
    assert later.plan.steps == ()


def test_a_quiet_gang_s_members_beyond_min_count_join_when_a_node_appears() -> None:
    """A gang admitted with minCount of its pods bound, the rest fitting nowhere, is
    quiet; a node added changes none of its pods, yet its waiting members fit there."""
    state, group, _ = running_gang()
    state.apply("Pod", pod("train-2", group="train", cpu="4"))
    written(state, group)
    carried = schedule(state, now=NOW, config=CONFIG).carried
    steps, carried = steps_for_train(state, carried)
    assert steps == []
    assert KEY in carried.quiet
    state.apply("Node", node("n2", cpu="4"))
    result = schedule(state, now=NOW, config=CONFIG, carried=carried)
    assert [growth.placements for growth in result.growths] == [{"train-2": "n2"}]
    assert [str(step.kind) for step in result.plan.steps if step.group == KEY] == ["grow"]
