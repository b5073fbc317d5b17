"""The pods of a Job whose native field the API server dropped run as any pod's.

The Job's template was gated for `spec.scheduling` by Muster's webhook; the stored Job
has no such field, so no PodGroup will ever come. The engine lets its gated pods go
(gate removed, no pin) and tells the Job why, once.
"""

from __future__ import annotations

from muster.api.keys import GroupKey, PodKey
from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.decisions.plan import EventTarget, RecordEvent, Step, StepKind, Ungate
from muster.scheduler.lifecycle.let_go import REASON
from tests.unit.scheduler.builders import Obj, cluster, job, node, pod, pod_group

GANG_FIELD = {"schedulingPolicy": {"gang": {"minCount": 2}}}


def let_go_steps(state: ClusterState) -> list[Step]:
    plan = schedule(state, now=0.0, config=EngineConfig()).plan
    return [step for step in plan.steps if step.kind is StepKind.LET_GO]


def members(*names: str, group: str = "train") -> list[Obj]:
    """Gated pods of the group, as the Job controller creates them from the template."""
    return [pod(name, group=group) for name in names]


def test_the_gated_pods_are_let_go_and_the_job_is_told_why() -> None:
    state = cluster(node("n1"), job("train"), *members("train-1", "train-0"))
    (step,) = let_go_steps(state)
    assert step.group == GroupKey("default", "train")
    ungate, tell = step.actions
    assert ungate == Ungate((PodKey("default", "train-0"), PodKey("default", "train-1")))
    assert isinstance(tell, RecordEvent)
    assert (tell.target, tell.warning, tell.reason) == (
        EventTarget("batch/v1", "Job", "default", "train", "train-uid"),
        True,
        REASON,
    )
    assert "dropped spec.scheduling" in tell.message
    assert "WorkloadWithJob" in tell.message
    assert "without gang scheduling" in tell.message


def test_pods_that_come_later_go_too_and_the_job_is_told_only_once() -> None:
    state = cluster(
        node("n1"),
        job("train"),
        pod("train-0", group="train", gated=False, node_name="n1"),
        *members("train-1"),
    )
    (step,) = let_go_steps(state)
    assert step.actions == (Ungate((PodKey("default", "train-1"),)),)


def test_pods_finished_or_on_their_way_out_are_left_alone() -> None:
    leaving = pod("train-1", group="train")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    state = cluster(node("n1"), job("train"), pod("train-0", group="train", phase="Failed"))
    state.apply("Pod", leaving)
    assert let_go_steps(state) == []


def test_nothing_is_let_go_once_every_pod_runs() -> None:
    state = cluster(node("n1"), job("train"), pod("train-0", group="train", node_name="n1"))
    assert let_go_steps(state) == []


def test_a_job_that_kept_its_field_waits_for_its_pod_group() -> None:
    state = cluster(node("n1"), job("train", scheduling=GANG_FIELD), *members("train-0"))
    assert let_go_steps(state) == []


def test_a_job_that_also_carries_the_label_waits_for_the_pod_group_the_label_makes() -> None:
    labelled = job("train", labels={"scheduling.muster.dev/policy": "gang"})
    assert let_go_steps(cluster(node("n1"), labelled, *members("train-0"))) == []


def test_a_template_gated_by_hand_waits_for_its_pod_group() -> None:
    by_hand = job("train", gated_for_field=False)
    assert let_go_steps(cluster(node("n1"), by_hand, *members("train-0"))) == []


def test_a_pod_group_made_after_all_takes_the_pods() -> None:
    state = cluster(node("n1"), job("train"), pod_group("train", min_count=1), *members("t-0"))
    assert let_go_steps(state) == []


def test_a_job_forgotten_or_changed_to_opt_in_lets_nothing_go() -> None:
    state = cluster(node("n1"), job("train"), *members("train-0"))
    state.delete("Job", "default", "train")
    assert let_go_steps(state) == []
    state.apply("Job", job("train"))
    assert let_go_steps(state) != []
    state.apply("Job", job("train", labels={"scheduling.muster.dev/policy": "gang"}))
    assert let_go_steps(state) == []


def test_a_malformed_job_is_ignored() -> None:
    nameless = job("train")
    del nameless["metadata"]["uid"]
    state = cluster(node("n1"), nameless, *members("train-0"))
    assert state.dropped_fields == {}
    assert let_go_steps(state) == []


def test_each_job_lets_go_only_the_pods_of_its_own_group() -> None:
    state = cluster(
        node("n1"),
        job("a"),
        job("b", namespace="other"),
        *members("a-0", group="a"),
        pod("b-0", group="b", namespace="other"),
        pod("c-0", group="c"),
    )
    ungated = {step.actions[0] for step in let_go_steps(state)}
    assert ungated == {Ungate((PodKey("default", "a-0"),)), Ungate((PodKey("other", "b-0"),))}


def test_the_gated_members_of_a_basic_group_go_as_they_come_without_a_word() -> None:
    """A basic group is left to kube-scheduler pod by pod; the pod webhook gated its
    members only because it could not read the group's policy at their creation."""
    state = cluster(
        node("n1"),
        pod_group("launcher", min_count=None),
        pod("launcher-0", group="launcher", gated=False, node_name="n1"),
        pod("launcher-1", group="launcher"),
        pod("launcher-2", group="launcher", phase="Failed"),
    )
    (step,) = let_go_steps(state)
    assert step.group == GroupKey("default", "launcher")
    assert step.actions == (Ungate((PodKey("default", "launcher-1"),)),)


def test_a_gang_groups_gated_members_are_not_let_go() -> None:
    state = cluster(node("n1"), pod_group("train", min_count=2), *members("train-0"))
    assert let_go_steps(state) == []
