from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from muster.api.constants import CONDITION_SCHEDULED, GANG_GATE, POD_GROUP_LABEL
from muster.api.keys import GroupKey, PodKey
from muster.scheduler import EngineConfig
from muster.scheduler.decisions.results import Admission, Victim
from muster.scheduler.lifecycle.follow import Following
from muster.scheduler.lifecycle.transitions import Planner
from muster.scheduler.objects.conditions import condition
from muster.simulation.cluster import SimulatedCluster
from muster.simulation.documents import InvalidInputError
from muster.simulation.inventory import Entry
from muster.simulation.report import PreemptedPod

NOW = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
GATE = {"name": GANG_GATE}


def admit(cluster: SimulatedCluster, admission: Admission) -> None:
    """Carry out the plan the engine makes of one admission."""
    planner = Planner(cluster.state, now=NOW.timestamp(), config=EngineConfig())
    planner.admit(admission)
    cluster.execute(planner.plan())


def grow(cluster: SimulatedCluster, group: GroupKey, placements: dict[str, str]) -> None:
    planner = Planner(cluster.state, now=NOW.timestamp(), config=EngineConfig())
    planner.follow(cluster.state.groups[group], Following(complete=True), placements)
    cluster.execute(planner.plan())


def entry(body: dict[str, Any]) -> Entry:
    return Entry("in.yaml:1", body)


def node(name: str) -> Entry:
    return entry(
        {
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "8", "pods": "10"}},
        }
    )


def group(
    name: str, *, plan: dict[str, str] | None = None, single: bool = False, basic: bool = False
) -> Entry:
    policy = {"basic": {}} if basic else {"gang": {"minCount": 1}}
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if single:
        spec["disruptionMode"] = {"single": {}}
    body: dict[str, Any] = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }
    if plan is not None:
        body["status"] = {
            "conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}],
            "plan": plan,
        }
    return entry(body)


def pod(
    name: str, group_name: str | None, *, node_name: str | None = None, job: bool = False
) -> Entry:
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "labels": {}}
    if group_name is not None:
        metadata["labels"][POD_GROUP_LABEL] = group_name
    if job:
        metadata["ownerReferences"] = [{"kind": "Job", "name": "j", "controller": True}]
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if node_name is not None:
        spec["nodeName"] = node_name
    return entry({"kind": "Pod", "metadata": metadata, "spec": spec})


def loaded(*objects: Entry) -> SimulatedCluster:
    cluster = SimulatedCluster()
    cluster.load(
        objects=[node("n1"), node("n2")],
        pod_groups=[e for e in objects if e.body["kind"] == "PodGroup"],
        pods=[e for e in objects if e.body["kind"] == "Pod"],
    )
    return cluster


def key(name: str) -> GroupKey:
    return GroupKey("default", name)


def pod_key(name: str) -> PodKey:
    return PodKey("default", name)


def test_pending_gang_members_are_gated_as_the_webhook_would() -> None:
    cluster = loaded(
        group("gang"),
        group("basic", basic=True),
        group("admitted", plan={"a-0": "n1"}),
        pod("g-0", "gang"),
        pod("b-0", "basic"),
        pod("a-0", "admitted"),
        pod("a-1", "admitted"),
        pod("plain", None),
    )
    gated = {
        k.name for k, p in cluster.pods.items() if GATE in p["spec"].get("schedulingGates", [])
    }
    assert gated == {"g-0", "a-1"}


def test_objects_the_engine_rejects_are_input_problems() -> None:
    bad = pod("p", None)
    bad.body["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "a lot"
    with pytest.raises(InvalidInputError) as caught:
        loaded(bad)
    [problem] = caught.value.problems
    assert str(problem).startswith("in.yaml:1: Pod p: ")


def test_an_admission_records_the_plan_and_binds_the_pods() -> None:
    cluster = loaded(group("g"), pod("g-0", "g"), pod("g-1", "g"))
    admit(cluster, Admission(key("g"), {"g-0": "n1", "g-1": "n2"}))
    assert cluster.state.groups[key("g")].admitted
    assert cluster.pod_groups[key("g")]["status"]["plan"] == {"g-0": "n1", "g-1": "n2"}
    assert cluster.pods[pod_key("g-1")]["spec"] == {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        "nodeName": "n2",
    }
    assert cluster.placements == {key("g"): {"g-0": "n1", "g-1": "n2"}}


def test_a_growth_extends_the_plan() -> None:
    cluster = loaded(
        group("g", plan={"g-0": "n1"}), pod("g-0", "g", node_name="n1"), pod("g-1", "g")
    )
    grow(cluster, key("g"), {"g-1": "n2"})
    assert cluster.pod_groups[key("g")]["status"]["plan"] == {"g-0": "n1", "g-1": "n2"}
    assert cluster.pods[pod_key("g-1")]["spec"]["nodeName"] == "n2"
    assert cluster.placements == {key("g"): {"g-1": "n2"}}


def test_a_gang_preempted_whole_is_requeued_and_its_job_pods_come_back_gated() -> None:
    cluster = loaded(
        group("low", plan={"low-0": "n1", "low-1": "n1"}),
        pod("low-0", "low", node_name="n1", job=True),
        pod("low-1", "low", node_name="n1"),
        group("high"),
        pod("high-0", "high"),
    )
    victims = (
        Victim(pod_key("low-0"), key("low"), 0),
        Victim(pod_key("low-1"), key("low"), 0),
    )
    admit(cluster, Admission(key("high"), {"high-0": "n1"}, victims=victims))
    assert cluster.pods[pod_key("high-0")]["spec"]["schedulingGates"] == [GATE]  # not yet
    assert cluster.victims == [PreemptedPod(v.pod, v.group) for v in victims]
    assert cluster.preempted == {key("low"): key("high")}
    low = cluster.pod_groups[key("low")]
    assert not cluster.state.groups[key("low")].admitted
    assert "plan" not in low["status"]
    scheduled = condition(low["status"], CONDITION_SCHEDULED)
    assert scheduled is not None
    assert scheduled["reason"] == "Preempted"
    assert scheduled["message"] == "preempted by PodGroup default/high to make room for its gang"
    assert condition(low["status"], "DisruptionTarget") is not None
    remade = cluster.pods[pod_key("low-0")]
    assert "nodeName" not in remade["spec"]
    assert remade["spec"]["schedulingGates"] == [GATE]
    assert pod_key("low-1") not in cluster.pods
    assert pod_key("low-1") not in cluster.state.pods


def test_a_single_disruption_gang_stays_admitted_without_the_victim() -> None:
    cluster = loaded(
        group("low", plan={"low-0": "n1", "low-1": "n2"}, single=True),
        pod("low-0", "low", node_name="n1", job=True),
        pod("low-1", "low", node_name="n2", job=True),
        group("high"),
        pod("high-0", "high"),
    )
    victim = Victim(pod_key("low-0"), key("low"), 0)
    admit(cluster, Admission(key("high"), {"high-0": "n1"}, victims=(victim,)))
    assert cluster.state.groups[key("low")].admitted
    assert cluster.pod_groups[key("low")]["status"]["plan"] == {"low-1": "n2"}
    assert cluster.pods[pod_key("low-0")]["spec"]["schedulingGates"] == [GATE]
    assert cluster.preempted == {}


def test_a_plain_victim_is_deleted_and_has_no_group() -> None:
    cluster = loaded(group("g"), pod("g-0", "g"), pod("plain", None, node_name="n1"))
    victim = Victim(pod_key("plain"), None, 0)
    admit(cluster, Admission(key("g"), {"g-0": "n1"}, victims=(victim,)))
    assert cluster.victims == [PreemptedPod(pod_key("plain"), None)]
    assert pod_key("plain") not in cluster.pods


def test_a_pod_placed_then_preempted_is_no_longer_counted_as_placed() -> None:
    cluster = loaded(group("mid"), pod("mid-0", "mid"), group("top"), pod("top-0", "top"))
    admit(cluster, Admission(key("mid"), {"mid-0": "n1"}))
    victim = Victim(pod_key("mid-0"), key("mid"), 0)
    admit(cluster, Admission(key("top"), {"top-0": "n1"}, victims=(victim,)))
    assert cluster.placements == {key("mid"): {}}  # top's pods wait for the victim to go


def test_members_are_the_labelled_pods() -> None:
    cluster = loaded(group("g"), pod("g-0", "g"), pod("other", None))
    assert [p["metadata"]["name"] for p in cluster.members(key("g"))] == ["g-0"]
