"""A cycle's decisions turned into its plan: the steps of each transition, in order,
each decision written before anything acts on it, and the status it writes."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.constants import CONDITION_SCHEDULED
from muster.api.keys import GroupKey, PodKey
from muster.api.times import rfc3339
from muster.scheduler import ClusterState, EngineConfig
from muster.scheduler.decisions.plan import (
    Action,
    Evict,
    Plan,
    RecordEvent,
    Release,
    StepKind,
    WriteStatus,
    on_pod_group,
)
from muster.scheduler.decisions.results import Admission, Reason, Verdict, Victim
from muster.scheduler.lifecycle.follow import Following, Rollback
from muster.scheduler.lifecycle.transitions import Planner, benched_by_lifecycle, released_members
from muster.scheduler.memory.refusals import Refused
from muster.scheduler.objects.conditions import condition
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod, pod_group

NOW = 1_798_761_600.0
CONFIG = EngineConfig(release_timeout=60.0, victims_timeout=300.0, rollback_backoff=10.0)
KEY = GroupKey("default", "g")
VICTIM_GANG = GroupKey("default", "v")
NODES = (node("n1"), node("n2"))


def kinds(actions: tuple[Action, ...]) -> list[str]:
    return [type(action).__name__ for action in actions]


def scheduled(plan: Plan, key: GroupKey = KEY) -> dict[str, Any]:
    found = condition(plan.statuses[key], CONDITION_SCHEDULED)
    assert found is not None
    return dict(found)


def admitted_gang(name: str, plan: dict[str, str], *, released: bool, **group: Any) -> list[Obj]:
    """An admitted gang whose members are released (pinned, ungated) or still gated."""
    record = pod_group(name, min_count=len(plan), admitted=True, plan=plan, **group)
    record["status"]["admittedAt"] = rfc3339(NOW - 100)
    members = [
        pod(
            member,
            group=name,
            gated=not released,
            spec={"nodeSelector": {"kubernetes.io/hostname": node_name}} if released else {},
        )
        for member, node_name in plan.items()
    ]
    return [record, *members]


def planner(state: ClusterState) -> Planner:
    return Planner(state, now=NOW, config=CONFIG)


def test_an_admission_writes_its_plan_tells_it_then_releases_its_pods() -> None:
    state = cluster(*NODES, *gang("g", 2))
    plans = planner(state)
    plans.admit(Admission(KEY, {"g-1": "n2", "g-0": "n1"}))
    plan = plans.plan()
    (step,) = plan.steps
    assert (step.kind, step.exclusive) == (StepKind.ADMIT, False)
    assert step.actions == (
        WriteStatus(KEY),
        RecordEvent(on_pod_group(KEY), False, "Scheduled", "2 pods placed"),
        Release(KEY, (("g-0", "n1"), ("g-1", "n2"))),
    )
    status = plan.statuses[KEY]
    assert status["plan"] == {"g-0": "n1", "g-1": "n2"}
    assert status["lifecycle"] == {"rollbacks": 0, "releaseStarted": rfc3339(NOW)}
    assert (scheduled(plan)["status"], scheduled(plan)["reason"]) == ("True", "Scheduled")
    assert plan.wake_at == NOW + CONFIG.release_timeout


def test_a_release_carries_the_terms_the_engine_read_from_each_pod() -> None:
    """The pin narrows the pod's own required node terms and its write replaces them
    whole: the release carries them, so its write needs nothing more."""
    zoned = gang("g", 2)
    required = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "z", "operator": "Exists"}]}]}
    zoned[1]["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
    }
    plans = planner(cluster(*NODES, *zoned))
    plans.admit(Admission(KEY, {"g-0": "n1", "g-1": "n2"}))
    (release,) = (a for a in plans.plan().steps[0].actions if isinstance(a, Release))
    ((name, terms),) = release.terms  # g-1 has none
    ((requirement,),) = (term.match_expressions for term in terms)
    assert name == "g-0"
    assert (requirement.key, requirement.operator, requirement.values) == ("z", "Exists", ())


def test_a_preemption_takes_the_victim_gang_down_first_then_evicts_and_waits() -> None:
    victim_gang = admitted_gang("v", {"v-0": "n1", "v-1": "n2"}, released=False)
    victim_gang[1]["spec"]["nodeName"] = "n1"
    victim_gang[2]["spec"]["nodeName"] = "n2"
    state = cluster(*NODES, *victim_gang, *gang("g", 2), *gang("other", 1))
    victims = (
        Victim(PodKey("default", "v-0"), VICTIM_GANG, 0, must_go=True),
        Victim(PodKey("default", "v-1"), VICTIM_GANG, 0),
    )
    plans = planner(state)
    plans.verdict(state.groups[GroupKey("default", "other")], _waiting(), kept=False)
    plans.admit(Admission(KEY, {"g-0": "n1", "g-1": "n2"}, victims=victims))
    plan = plans.plan()
    first, second = plan.steps
    assert (first.kind, first.exclusive, second.kind) == (StepKind.PREEMPT, True, StepKind.RECORD)
    assert kinds(first.actions) == [
        "WriteStatus",
        "RecordEvent",
        "WriteStatus",
        "RecordEvent",
        "Evict",
        "Evict",
    ]
    assert first.actions[0] == WriteStatus(VICTIM_GANG)
    assert first.actions[-2:] == (
        Evict((PodKey("default", "v-0"),), force=True),
        Evict((PodKey("default", "v-1"),), force=False),
    )
    taken_down = scheduled(plan, VICTIM_GANG)
    assert (taken_down["status"], taken_down["reason"]) == ("False", "Preempted")
    assert "plan" not in plan.statuses[VICTIM_GANG]
    assert plan.statuses[KEY]["lifecycle"]["victims"] == ["default/v-0", "default/v-1"]
    assert plan.wake_at == NOW + CONFIG.victims_timeout


def test_a_victim_gang_disrupted_pod_by_pod_only_loses_the_victims_from_its_plan() -> None:
    victim_gang = admitted_gang("v", {"v-0": "n1", "v-1": "n2"}, released=False, single=True)
    state = cluster(*NODES, *victim_gang, *gang("g", 1))
    victims = (Victim(PodKey("default", "v-0"), VICTIM_GANG, 0),)
    plans = planner(state)
    plans.admit(Admission(KEY, {"g-0": "n1"}, victims=victims))
    plan = plans.plan()
    assert plan.statuses[VICTIM_GANG]["plan"] == {"v-1": "n2"}
    assert scheduled(plan, VICTIM_GANG)["status"] == "True"


def test_a_rollback_is_written_with_its_backoff_before_its_released_pods_are_evicted() -> None:
    state = cluster(*NODES, *admitted_gang("g", {"g-0": "n1", "g-1": "n2"}, released=True))
    plans = planner(state)
    plans.follow(state.groups[KEY], Following(Rollback("node n1 is gone")), {})
    plan = plans.plan()
    (step,) = plan.steps
    assert step.kind is StepKind.ROLL_BACK
    assert kinds(step.actions) == ["WriteStatus", "RecordEvent", "Evict"]
    assert step.actions[-1] == Evict(
        (PodKey("default", "g-0"), PodKey("default", "g-1")), force=True
    )
    written = scheduled(plan)
    assert (written["status"], written["reason"]) == ("False", "RolledBack")
    assert written["message"] == (
        "rolled back: node n1 is gone; in backoff until "
        f"{rfc3339(NOW + CONFIG.rollback_backoff)} (rollback 1 in a row)"
    )
    assert plan.statuses[KEY]["lifecycle"]["rollbacks"] == 1
    assert "plan" not in plan.statuses[KEY]
    assert plan.wake_at == NOW + CONFIG.rollback_backoff


def test_a_rollback_kube_scheduler_asked_for_remembers_the_refused_node() -> None:
    state = cluster(*NODES, *admitted_gang("g", {"g-0": "n1"}, released=True))
    plans = planner(state)
    refusal = Rollback("refused", (Refused("g-0", "n1", "0/2 nodes are available"),))
    plans.follow(state.groups[KEY], Following(refusal), {})
    plan = plans.plan()
    assert plan.statuses[KEY]["refusals"]["rollbacks"] == 1
    assert "in backoff until" in scheduled(plan)["message"]


def test_a_vacated_gang_is_recorded_as_waiting_for_its_pods_without_its_plan() -> None:
    state = cluster(*NODES, pod_group("g", min_count=2, admitted=True, plan={"g-0": "n1"}))
    plans = planner(state)
    plans.follow(state.groups[KEY], Following(vacated=True), {})
    plan = plans.plan()
    (step,) = plan.steps
    assert step.kind is StepKind.RECORD
    assert scheduled(plan)["reason"] == "WaitingForPods"
    assert "plan" not in plan.statuses[KEY]


@pytest.mark.parametrize(
    ("following", "growth", "kind", "released"),
    [
        pytest.param(
            Following(to_release=(("g-0", "n1"),), deadline=NOW + 5),
            {},
            StepKind.FOLLOW,
            (("g-0", "n1"),),
            id="finish a release",
        ),
        pytest.param(
            Following(complete=True), {"g-1": "n2"}, StepKind.GROW, (("g-1", "n2"),), id="grow"
        ),
        pytest.param(Following(complete=True), {}, StepKind.FOLLOW, None, id="nothing to do"),
    ],
)
def test_an_admitted_gang_is_followed(
    following: Following,
    growth: dict[str, str],
    kind: StepKind,
    released: tuple[tuple[str, str], ...] | None,
) -> None:
    state = cluster(
        *NODES, *admitted_gang("g", {"g-0": "n1"}, released=False), pod("g-1", group="g")
    )
    plans = planner(state)
    plans.follow(state.groups[KEY], following, growth)
    (step,) = plans.plan().steps
    assert step.kind is kind
    releases = [action for action in step.actions if isinstance(action, Release)]
    assert releases == ([Release(KEY, released)] if released else [])
    if growth:
        assert plans.statuses[KEY]["plan"] == {"g-0": "n1", **growth}


def test_victims_that_stay_are_evicted_again_and_told_as_blocked() -> None:
    state = cluster(*NODES, *admitted_gang("g", {"g-0": "n1"}, released=False))
    stuck = (PodKey("default", "db"),)
    plans = planner(state)
    plans.follow(state.groups[KEY], Following(awaiting=stuck, evict=stuck, deadline=NOW + 9), {})
    plan = plans.plan()
    (step,) = plan.steps
    blocked = [a for a in step.actions if isinstance(a, RecordEvent) and a.warning]
    assert [event.reason for event in blocked] == ["PreemptionBlocked"]
    assert step.actions[-1] == Evict(stuck, force=False)
    assert plan.wake_at == NOW + 9


def test_a_gang_taken_down_has_its_released_pods_evicted() -> None:
    state = cluster(*NODES, *admitted_gang("g", {"g-0": "n1"}, released=True))
    plans = planner(state)
    plans.take_down(state.groups[KEY])
    (step,) = plans.plan().steps
    assert step.kind is StepKind.TAKE_DOWN
    assert step.actions[-1] == Evict((PodKey("default", "g-0"),), force=True)


def test_a_verdict_kept_leaves_the_condition_as_it_is_and_wakes_at_the_backoffs_end() -> None:
    group = pod_group("g", min_count=2)
    group["status"] = {"lifecycle": {"rollbacks": 1, "backoffUntil": rfc3339(NOW + 30)}}
    state = cluster(*NODES, group)
    plans = planner(state)
    plans.verdict(state.groups[KEY], _waiting(), kept=True)
    plan = plans.plan()
    assert condition(plan.statuses[KEY], CONDITION_SCHEDULED) is None
    assert plan.wake_at == NOW + 30


def test_a_status_that_would_not_change_makes_the_group_idle() -> None:
    state = cluster(*NODES, *gang("g", 2))
    plans = planner(state)
    plans.verdict(state.groups[KEY], _waiting(), kept=False)
    assert plans.idle() == set()
    written = pod_group("g", min_count=2)
    written["status"] = plans.statuses[KEY]
    twin = cluster(*NODES, written, *gang("g", 2)[1:])
    again = planner(twin)
    again.verdict(twin.groups[KEY], _waiting(), kept=False)
    assert again.idle() == {KEY}


def test_released_members_leave_out_gated_finished_and_leaving_pods() -> None:
    leaving = pod("g-2", group="g", gated=False)
    leaving["metadata"]["deletionTimestamp"] = rfc3339(NOW)
    state = cluster(
        *NODES,
        pod_group("g", min_count=4),
        pod("g-0", group="g", gated=False),
        pod("g-1", group="g"),
        leaving,
        pod("g-3", group="g", gated=False, phase="Succeeded"),
    )
    assert released_members(state, KEY) == (PodKey("default", "g-0"),)


@pytest.mark.parametrize(
    ("reason", "backoff", "released", "expected"),
    [
        pytest.param("Unschedulable", None, False, None, id="waiting"),
        pytest.param("RolledBack", NOW + 30, False, Reason.ROLLED_BACK, id="in backoff"),
        pytest.param("Unschedulable", NOW - 1, False, None, id="backoff over"),
        pytest.param("Preempted", None, True, Reason.PREEMPTED, id="taken down, pods left"),
        pytest.param("Preempted", None, False, None, id="taken down, pods gone"),
    ],
)
def test_a_gang_in_backoff_or_still_being_taken_down_is_held_back(
    reason: str, backoff: float | None, released: bool, expected: Reason | None
) -> None:
    group = pod_group("g", min_count=1)
    group["status"]["conditions"] = [
        {"type": CONDITION_SCHEDULED, "status": "False", "reason": reason, "message": "said"}
    ]
    if backoff is not None:
        group["status"]["lifecycle"] = {"rollbacks": 1, "backoffUntil": rfc3339(backoff)}
    state = cluster(*NODES, group, pod("g-0", group="g", gated=not released))
    verdict = benched_by_lifecycle(state, state.groups[KEY], NOW)
    assert (verdict.reason if verdict else None) == expected
    if verdict is not None:
        assert verdict.message == "said"


def test_an_admitted_gang_is_never_held_back() -> None:
    state = cluster(*NODES, *admitted_gang("g", {"g-0": "n1"}, released=True))
    assert benched_by_lifecycle(state, state.groups[KEY], NOW) is None


def _waiting() -> Verdict:
    return Verdict(Reason.UNSCHEDULABLE, "no room")
