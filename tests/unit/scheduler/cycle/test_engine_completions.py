"""A Job's gang near its end: once some of its pods succeeded, the Job makes only the pods
still to run, and the gang needs only those, together (`ClusterState.quorum`)."""

from __future__ import annotations

import copy

from muster.api.constants import COMPLETIONS_ANNOTATION
from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import Reason
from tests.unit.scheduler.builders import Obj, cluster, node, pod, pod_group
from tests.unit.scheduler.fake_api import FakeApi

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12)


def of_a_job(group: Obj, completions: int) -> Obj:
    """The PodGroup as Muster makes it for a Job of `completions` completions."""
    marked = copy.deepcopy(group)
    marked["metadata"].setdefault("annotations", {})[COMPLETIONS_ANNOTATION] = str(completions)
    return marked


def released(api: FakeApi, key: GroupKey) -> int:
    return sum("nodeSelector" in obj["spec"] for obj in api.members(key))


def running_gang_of_three(*, completions: int | None) -> tuple[FakeApi, GroupKey]:
    """A gang of three, released and bound; two of its pods then succeed, and the third
    is deleted (its node lost, say), so that its Job makes one pod in its place."""
    api = FakeApi(now=NOW, config=CONFIG)
    for _ in range(3):
        api.add_node(cpu=1)
    key = api.add_gang("g", size=3, min_count=3, cpu=1)
    if completions is not None:
        api.put_group(of_a_job(api.groups[key], completions))
    api.cycle()
    for pod_key in api.unbound_released():
        api.bind(pod_key)
    api.cycle()
    first, second, third = sorted(
        pod_key for pod_key, obj in api.pods.items() if obj["spec"].get("nodeName")
    )
    api.finish(first)
    api.finish(second)
    api.remove_pod(third)
    return api, key


def test_the_one_pod_a_job_has_left_to_run_is_released() -> None:
    api, key = running_gang_of_three(completions=3)
    api.cycle()
    assert released(api, key) == 3, "two that succeeded, and the replacement"
    (replacement,) = api.unbound_released()
    api.bind(replacement)
    assert api.pods[replacement]["spec"]["nodeName"]


def test_a_group_whose_completions_are_not_known_waits_for_min_count_as_before() -> None:
    """A PodGroup not made for a Job (or made before Muster marked completions): native
    gang scheduling counts no finished pod either."""
    api, key = running_gang_of_three(completions=None)
    api.cycle()
    assert released(api, key) == 2


def test_a_gang_taken_down_after_some_pods_succeeded_starts_again_with_the_rest() -> None:
    group = of_a_job(pod_group("g", min_count=4), completions=4)
    done = [pod(f"g-done-{i}", group="g", node_name="n1", phase="Succeeded") for i in range(2)]
    again = [pod(f"g-new-{i}", group="g") for i in range(2)]
    state = cluster(node("n1", cpu="2"), node("n2", cpu="2"), group, *done, *again)
    (admission,) = schedule(state, now=NOW, config=CONFIG).admissions
    assert sorted(admission.placements) == ["g-new-0", "g-new-1"]


def test_the_pods_left_to_run_are_still_one_gang() -> None:
    """Completions 8, minCount 4: the second four are a gang of four, released together
    or not at all, however many of the first four succeeded."""
    group = of_a_job(pod_group("g", min_count=4), completions=8)
    done = [pod(f"g-done-{i}", group="g", node_name="n1", phase="Succeeded") for i in range(4)]
    again = [pod(f"g-new-{i}", group="g") for i in range(4)]
    state = cluster(node("n1", cpu="3"), group, *done, *again)
    result = schedule(state, now=NOW, config=CONFIG)
    assert result.admissions == ()
    assert result.verdicts[GroupKey("default", "g")].reason is Reason.UNSCHEDULABLE


def test_a_gang_short_of_the_pods_left_to_run_waits_for_them() -> None:
    group = of_a_job(pod_group("g", min_count=4), completions=4)
    done = pod("g-done", group="g", node_name="n1", phase="Succeeded")
    state = cluster(node("n1", cpu="4"), group, done, pod("g-new", group="g"))
    verdict = schedule(state, now=NOW, config=CONFIG).verdicts[GroupKey("default", "g")]
    assert verdict.reason is Reason.WAITING_FOR_PODS
    assert verdict.message.startswith("1/3 member pods exist")


def test_the_last_pod_of_a_gang_kept_in_one_domain_goes_where_the_gang_ran() -> None:
    """Its other members have all succeeded: none holds a node, and the domain is the
    one its plan placed it in (soak seed 174391727, soak-0149: gated to the end)."""
    plan = {"g-done-0": "a1", "g-done-1": "a1"}
    group = of_a_job(
        pod_group("g", min_count=3, topology_key="zone", admitted=True, plan=plan), completions=3
    )
    done = [pod(f"g-done-{i}", group="g", node_name="a1", phase="Succeeded") for i in range(2)]
    state = cluster(
        node("a1", cpu="2", labels={"zone": "a"}),
        node("a2", cpu="2", labels={"zone": "a"}),
        node("b1", cpu="8", labels={"zone": "b"}),
        group,
        *done,
        pod("g-new", group="g"),
    )
    (growth,) = schedule(state, now=NOW, config=CONFIG).growths
    assert growth.placements["g-new"] in {"a1", "a2"}
