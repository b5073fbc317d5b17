"""A released pod's deadline, through whole cycles: in kube-scheduler's queue it counts
from kube-scheduler's last bind (a long queue is worked through, not stuck), held by
another scheduling gate it counts from the release alone, and a restarted operator
reads kube-scheduler's progress from the pods themselves."""

from __future__ import annotations

from muster.api.constants import GANG_GATE
from muster.api.keys import GroupKey, PodKey
from muster.scheduler import ClusterState, EngineConfig
from muster.scheduler.decisions.plan import StepKind
from muster.scheduler.decisions.results import CycleResult
from tests.unit.scheduler.builders import pod
from tests.unit.scheduler.fake_api import FakeApi

NOW = 1_798_761_600.0
CONFIG = EngineConfig(release_timeout=60.0, rollback_backoff=10.0)
OTHER_GATE = {"name": "example.com/quota"}


def two_gangs() -> tuple[FakeApi, GroupKey, GroupKey]:
    """Two gangs admitted and released in one cycle: `slow` of two pods, `other` of one."""
    api = FakeApi(now=NOW, config=CONFIG)
    for _ in range(3):
        api.add_node(cpu=2)
    slow = api.add_gang("slow", size=2, min_count=2, cpu=2)
    other = api.add_gang("other", size=1, min_count=1, cpu=2)
    return api, slow, other


def bind_the_other_at(api: FakeApi, other: GroupKey, moment: float) -> None:
    """kube-scheduler's progress elsewhere: the other gang's pod bound at `moment`."""
    api.now = moment
    [other_pod] = members(api, other)
    api.bind(other_pod)


def members(api: FakeApi, key: GroupKey) -> list[PodKey]:
    return sorted(PodKey("default", obj["metadata"]["name"]) for obj in api.members(key))


def step_of(result: CycleResult, key: GroupKey) -> StepKind | None:
    kinds = [step.kind for step in result.plan.steps if step.group == key]
    return kinds[0] if kinds else None


def message(api: FakeApi, key: GroupKey) -> str:
    text: str = api.groups[key]["status"]["conditions"][0]["message"]
    return text


def cycle_at(api: FakeApi, moment: float) -> CycleResult:
    api.now = moment
    return api.cycle()


def assert_rolled_back_late(api: FakeApi, result: CycleResult, key: GroupKey) -> None:
    assert step_of(result, key) is StepKind.ROLL_BACK
    assert "2 pod(s) not bound within 60s of release" in message(api, key)


def test_a_released_pod_waits_its_turn_while_kube_scheduler_keeps_binding() -> None:
    api, slow, other = two_gangs()
    api.cycle()
    bind_the_other_at(api, other, NOW + 50)
    # Past the release deadline, 11 s after kube-scheduler's last bind:
    result = cycle_at(api, NOW + 61)
    assert step_of(result, slow) is not StepKind.ROLL_BACK
    assert result.plan.wake_at == NOW + 110
    # kube-scheduler bound nothing for the whole timeout:
    assert_rolled_back_late(api, cycle_at(api, NOW + 110), slow)


def test_a_released_pod_is_bound_in_its_turn_and_the_gang_completes() -> None:
    api, slow, other = two_gangs()
    api.cycle()
    binds = [*members(api, other), *members(api, slow)]
    for moment, key in zip((NOW + 50, NOW + 100, NOW + 150), binds, strict=True):
        api.now = moment
        api.bind(key)
        assert step_of(cycle_at(api, moment), slow) is not StepKind.ROLL_BACK
    assert api.state.groups[slow].plan and "rolled back" not in message(api, slow)


def test_a_pod_held_by_another_gate_is_late_from_its_release_whatever_else_binds() -> None:
    api, slow, other = two_gangs()
    for key in members(api, slow):
        obj = api.pods[key]
        obj["spec"]["schedulingGates"] = [OTHER_GATE, *obj["spec"]["schedulingGates"]]
        api.put_pod(obj)
    api.cycle()
    bind_the_other_at(api, other, NOW + 50)
    assert_rolled_back_late(api, cycle_at(api, NOW + 60), slow)


def test_a_restarted_operator_reads_kube_schedulers_last_bind_from_the_pods() -> None:
    api, _, other = two_gangs()
    api.cycle()
    bind_the_other_at(api, other, NOW + 50)
    api.restart()
    assert api.state.last_bind == NOW + 50
    assert cycle_at(api, NOW + 61).plan.wake_at == NOW + 110


def test_only_a_bind_counts_as_progress() -> None:
    """A pod seen bound without a PodScheduled time (made with its node set), a pod
    still unbound, and one whose PodScheduled condition is False tell nothing."""
    state = ClusterState()
    bound = "2027-01-01T00:00:00Z"
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": bound}
    refused = {**scheduled, "status": "False", "reason": "Unschedulable"}
    for obj in (
        pod("placed", node_name="n1"),
        {**pod("pending", gated=False), "status": {"conditions": [refused]}},
        {**pod("gated", group="g"), "status": {"conditions": [refused]}},
    ):
        assert state.apply("Pod", obj).rejected is None
    assert state.last_bind is None
    assert (
        state.apply(
            "Pod", {**pod("bound", node_name="n1"), "status": {"conditions": [scheduled]}}
        ).rejected
        is None
    )
    assert state.last_bind == 1_798_761_600.0
    gated = pod("gated", group="g")
    gated["spec"]["schedulingGates"] = [OTHER_GATE, {"name": GANG_GATE}]
    assert state.apply("Pod", gated).rejected is None
    record = state.pods[PodKey("default", "gated")].record
    assert record.gated and record.other_gates
