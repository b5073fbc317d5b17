"""The gang's lifecycle in the engine: backoff, preemption written ahead, rollbacks."""

from __future__ import annotations

from typing import Any

from muster.api.keys import GroupKey, PodKey
from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.decisions.plan import (
    Evict,
    RecordEvent,
    Release,
    StepKind,
    WriteStatus,
    on_pod_group,
)
from muster.scheduler.decisions.results import CycleResult
from tests.unit.scheduler.builders import cluster, node, pod, pod_group

NOW = 1_000_000.0
CONFIG = EngineConfig(release_timeout=60.0, victims_timeout=300.0)


def with_status(obj: dict[str, Any], result: CycleResult, key: GroupKey) -> dict[str, Any]:
    return {**obj, "status": result.plan.statuses[key]}


def test_a_gang_in_backoff_takes_no_capacity_from_the_gang_behind_it() -> None:
    backoff = {"lifecycle": {"rollbacks": 1, "backoffUntil": "1970-01-12T13:47:00Z"}}
    first = pod_group("first", created="2026-01-01T00:00:00Z")
    first["status"] = {
        **backoff,
        "conditions": [
            {
                "type": "PodGroupScheduled",
                "status": "False",
                "reason": "RolledBack",
                "message": "rolled back: x; in backoff",
            }
        ],
    }
    state = cluster(
        node("n1", cpu="4"),
        first,
        pod("first-0", group="first", cpu="4"),
        pod_group("second", created="2026-01-01T00:01:00Z"),
        pod("second-0", group="second", cpu="4"),
    )
    result = schedule(state, now=NOW, config=CONFIG)
    assert [a.group.name for a in result.admissions] == ["second"]
    verdict = result.verdicts[GroupKey("default", "first")]
    assert (verdict.reason, verdict.message) == ("RolledBack", "rolled back: x; in backoff")
    assert result.plan.wake_at is not None


def victim_cluster() -> ClusterState:
    low = pod_group("low", priority=0)
    low["status"] = {
        "conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}],
        "plan": {"low-0": "n1"},
    }
    return cluster(
        node("n1", cpu="4"),
        low,
        pod("low-0", group="low", cpu="4", node_name="n1", gated=False),
        pod_group("high", priority=1000),
        pod("high-0", group="high", cpu="4", priority=1000),
    )


def test_a_preemption_records_every_gang_before_evicting_and_releases_nothing_yet() -> None:
    """The victim's gang falls whole: its pods must go even if an eviction is refused."""
    result = schedule(victim_cluster(), now=NOW, config=CONFIG)
    [step] = [s for s in result.plan.steps if s.kind is StepKind.PREEMPT]
    low_key, high_key = GroupKey("default", "low"), GroupKey("default", "high")
    told = "preempted by PodGroup default/high to make room for its gang"
    assert step.actions == (
        WriteStatus(low_key),
        RecordEvent(
            on_pod_group(low_key), True, "Preempted", told
        ),  # once, though two conditions moved
        WriteStatus(high_key),
        RecordEvent(on_pod_group(high_key), False, "Scheduled", "1 pods placed"),
        Evict((PodKey("default", "low-0"),), force=True),
    )
    assert not any(isinstance(a, Release) for s in result.plan.steps for a in s.actions)
    high = result.plan.statuses[GroupKey("default", "high")]
    assert high["lifecycle"]["victims"] == ["default/low-0"]
    low = result.plan.statuses[GroupKey("default", "low")]
    assert "plan" not in low


def test_a_preemptor_is_released_once_its_victims_are_gone_even_after_a_restart() -> None:
    state = victim_cluster()
    first = schedule(state, now=NOW, config=CONFIG)
    high = GroupKey("default", "high")
    low = GroupKey("default", "low")
    high_obj = with_status(pod_group("high", priority=1000), first, high)
    low_obj = with_status(pod_group("low", priority=0), first, low)
    leaving = pod("low-0", group="low", cpu="4", node_name="n1", gated=False)
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    # A restarted operator: only the API objects.
    restarted = cluster(
        node("n1", cpu="4"),
        low_obj,
        leaving,
        high_obj,
        pod("high-0", group="high", cpu="4", priority=1000),
    )
    waiting = schedule(restarted, now=NOW + 10, config=CONFIG)
    assert not any(isinstance(a, Release | Evict) for s in waiting.plan.steps for a in s.actions)
    restarted.delete("Pod", "default", "low-0")
    released = schedule(restarted, now=NOW + 20, config=CONFIG)
    assert any(
        a == Release(high, (("high-0", "n1"),)) for s in released.plan.steps for a in s.actions
    )
    late = cluster(
        node("n1", cpu="4"),
        low_obj,
        leaving,
        high_obj,
        pod("high-0", group="high", cpu="4", priority=1000),
    )
    overdue = schedule(late, now=NOW + 301, config=CONFIG)
    [step] = [s for s in overdue.plan.steps if s.group == high]
    assert step.kind is StepKind.ROLL_BACK
    assert "still there 300s after its admission" in str(overdue.plan.statuses[high])


def test_a_victim_whose_eviction_did_not_take_is_told_blocked_and_evicted_again() -> None:
    """A victim of a gang disrupted pod by pod (one that falls whole is taken down by its
    own step, deleted where its eviction is refused: see test_budgets)."""
    first = schedule(victim_cluster(), now=NOW, config=CONFIG)
    high = GroupKey("default", "high")
    high_obj = with_status(pod_group("high", priority=1000), first, high)
    low_obj = with_status(
        pod_group("low", priority=0, single=True), first, GroupKey("default", "low")
    )
    staying = pod("low-0", group="low", cpu="4", node_name="n1", gated=False)
    state = cluster(
        node("n1", cpu="4"),
        low_obj,
        staying,
        high_obj,
        pod("high-0", group="high", cpu="4", priority=1000),
    )

    again = schedule(state, now=NOW + 10, config=CONFIG)

    [step] = [s for s in again.plan.steps if s.group == high]
    assert step.kind is StepKind.FOLLOW
    _, blocked, evict = step.actions
    assert isinstance(blocked, RecordEvent)
    assert (blocked.target, blocked.warning, blocked.reason) == (
        on_pod_group(high),
        True,
        "PreemptionBlocked",
    )
    assert "default/low-0" in blocked.message
    assert evict == Evict((PodKey("default", "low-0"),), force=False)


def test_a_rollback_is_written_before_its_pods_are_evicted_and_sets_the_backoff() -> None:
    gang = pod_group("g")
    gang["status"] = {
        "conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}],
        "plan": {"g-0": "gone"},
        "admittedAt": "1970-01-12T13:46:40Z",
    }
    state = cluster(node("n1", cpu="4"), gang, pod("g-0", group="g", gated=False))
    result = schedule(state, now=NOW, config=CONFIG)
    key = GroupKey("default", "g")
    [step] = [s for s in result.plan.steps if s.group == key]
    status = result.plan.statuses[key]
    told = status["conditions"][0]["message"]
    assert step.actions == (
        WriteStatus(key),
        RecordEvent(on_pod_group(key), True, "RolledBack", told),
        Evict((PodKey("default", "g-0"),), force=True),
    )
    assert status["lifecycle"]["rollbacks"] == 1 and "backoffUntil" in status["lifecycle"]
    assert "plan" not in status
    # Restarted between the write and the eviction: the eviction is finished, not redone.
    again = cluster(
        node("n1", cpu="4"), {**gang, "status": status}, pod("g-0", group="g", gated=False)
    )
    finish = schedule(again, now=NOW + 1, config=CONFIG)
    [step] = [s for s in finish.plan.steps if s.group == key]
    assert step.kind is StepKind.TAKE_DOWN
    assert finish.plan.statuses[key]["lifecycle"]["rollbacks"] == 1


def test_an_admitted_gang_whose_pods_are_all_gone_waits_again_and_is_admitted_anew() -> None:
    gang = pod_group("g", min_count=2)
    gang["status"] = {
        "conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}],
        "plan": {"g-0": "n1", "g-1": "n1"},
        "lifecycle": {"rollbacks": 1},
    }
    key = GroupKey("default", "g")
    # Its Job suspended (as Kueue suspends Jobs): the Job controller deleted the pods.
    result = schedule(cluster(node("n1", cpu="4"), gang), now=NOW, config=CONFIG)
    [step] = [s for s in result.plan.steps if s.group == key]
    waiting = "0/2 member pods exist; waiting for 2 more"
    assert step.actions == (
        WriteStatus(key),
        RecordEvent(on_pod_group(key), True, "WaitingForPods", waiting),
    )
    status = result.plan.statuses[key]
    [scheduled] = [c for c in status["conditions"] if c["type"] == "PodGroupScheduled"]
    assert (scheduled["status"], scheduled["reason"]) == ("False", "WaitingForPods")
    assert scheduled["message"] == "0/2 member pods exist; waiting for 2 more"
    assert "plan" not in status and status["lifecycle"] == {"rollbacks": 1}
    # Resumed: its new pods are admitted like any gang's, all of them at once.
    resumed = cluster(
        node("n1", cpu="4"),
        {**gang, "status": status},
        pod("g-2", group="g", cpu="2"),
        pod("g-3", group="g", cpu="2"),
    )
    [admission] = schedule(resumed, now=NOW + 1, config=CONFIG).admissions
    assert admission.placements == {"g-2": "n1", "g-3": "n1"}
