from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from muster.api.constants import POD_GROUP_LABEL, POLICY_LABEL
from muster.api.keys import GroupKey, PodKey
from muster.scheduler import EngineConfig
from muster.simulation.documents import Document
from muster.simulation.report import PreemptedPod, Report
from muster.simulation.run import NoSteadyStateError, simulate
from tests.unit.scheduler.device_builders import claim_template, device_class, resource_slice

SCHEDULED = [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}]


def node(name: str = "n1", cpu: str = "2", created: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if created is not None:
        metadata["creationTimestamp"] = created
    return {
        "kind": "Node",
        "metadata": metadata,
        "status": {"allocatable": {"cpu": cpu, "pods": "10"}},
    }


def job(name: str, *, cpu: str = "2", priority_class: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "labels": {POLICY_LABEL: "gang"},
            "creationTimestamp": "2026-01-01T10:00:00Z",
        },
        "spec": {"parallelism": 1, "template": {"spec": spec}},
    }


def running_gang(name: str) -> list[dict[str, Any]]:
    """A Job's gang admitted before the run: its PodGroup and its bound pod."""
    pod_group = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
        "status": {"conditions": SCHEDULED, "plan": {f"{name}-0": "n1"}},
    }
    pod = {
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-0",
            "labels": {POD_GROUP_LABEL: name},
            "ownerReferences": [{"kind": "Job", "name": name, "controller": True}],
        },
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}],
        },
    }
    return [job(name), pod_group, pod]


def run(*bodies: object, **options: Any) -> Report:
    return simulate([Document("in.yaml", i, body) for i, body in enumerate(bodies, 1)], **options)


def outcome(report: Report, name: str) -> Any:
    [found] = [group for group in report.pod_groups if group.group.name == name]
    return found


def test_a_gang_that_fits_is_placed_and_the_run_stops_when_nothing_changes() -> None:
    report = run(node(), job("train"))
    train = outcome(report, "train")
    assert (train.scheduled, train.reason, train.message) == (True, "Scheduled", "1/1 pods placed")
    assert train.placements == {"train-0": "n1"}
    assert report.cycles == 2  # admitted; nothing left to change (its pods never start here)


def test_a_gang_admitted_before_the_run_stays_admitted_and_places_nothing() -> None:
    report = run(node(), *running_gang("old"), job("new"))
    old, new = outcome(report, "old"), outcome(report, "new")
    assert (old.scheduled, old.placements, old.message) == (True, {}, "1/1 pods placed")
    assert (new.scheduled, new.reason) == (False, "Unschedulable")


def test_a_preempted_gang_waits_as_preempted_and_says_why() -> None:
    urgent = {"kind": "PriorityClass", "metadata": {"name": "urgent"}, "value": 1000}
    report = run(node(), urgent, *running_gang("low"), job("high", priority_class="urgent"))
    low = outcome(report, "low")
    assert (low.scheduled, low.reason, low.preempted) == (False, "Preempted", True)
    assert low.message.startswith("preempted by PodGroup default/high to make room for its gang; ")
    assert "Insufficient cpu" in low.message
    assert outcome(report, "high").placements == {"high-0": "n1"}
    assert report.victims == (PreemptedPod(PodKey("default", "low-0"), GroupKey("default", "low")),)


def busy(cpu: str = "1") -> dict[str, Any]:
    """A bound pod: the gangs that need its cpu wait (they would fit without it)."""
    container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    return {
        "kind": "Pod",
        "metadata": {"name": "busy"},
        "spec": {"nodeName": "n1", "containers": [container]},
    }


def test_the_clock_is_the_latest_creation_time_of_any_object() -> None:
    report = run(node(created="2026-01-01T11:00:00Z"), busy(), job("train"))
    assert "after 3600s in the queue" in outcome(report, "train").message


def test_an_explicit_clock_and_config_are_used() -> None:
    now = datetime(2026, 1, 1, 10, 0, 30, tzinfo=UTC)
    report = run(node(), busy(), job("train"), now=now, config=EngineConfig(starvation_seconds=10))
    assert "after 30s in the queue" in outcome(report, "train").message


def test_warnings_of_every_stage_are_reported() -> None:
    plain_job = job("plain")
    plain_job["metadata"]["labels"] = {}
    service = {"kind": "Service", "metadata": {"name": "web"}}
    report = run(node(), service, plain_job)
    assert [warning.origin for warning in report.warnings] == ["in.yaml:2", "in.yaml:3"]
    assert report.pod_groups == ()


def test_the_cycle_cap_stops_a_run_that_keeps_changing() -> None:
    with pytest.raises(NoSteadyStateError, match="after 1 scheduling cycles"):
        run(node(), job("train"), max_cycles=1)


def test_a_basic_group_is_left_to_kube_scheduler() -> None:
    workload = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "svc"},
        "spec": {"podGroupTemplates": [{"name": "web", "schedulingPolicy": {"basic": {}}}]},
    }
    web = outcome(run(node(), workload), "svc-web")
    assert (web.scheduled, web.reason, web.placements) == (False, "", {})
    assert "basic policy" in web.message


def test_a_dump_of_a_live_cluster_simulates_without_duplicates() -> None:
    job_body, pod_group, pod = running_gang("train")
    workload = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "train"},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
            "podGroupTemplates": [
                {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 1}}}
            ],
        },
    }
    dump = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [node(), job_body, workload, pod_group, pod],
    }
    report = run(dump)
    assert report.warnings == ()
    [train] = report.pod_groups
    assert (train.group.name, train.scheduled, train.placements) == ("train", True, {})
    assert train.message == "1/1 pods placed"


def test_a_gang_the_operator_holds_in_backoff_waits_with_the_operator_s_words() -> None:
    job_body, pod_group, pod = running_gang("train")
    said = "rolled back: 1 pod(s) not bound within 60s of release: train-0; in backoff until "
    said += "2026-01-01T10:05:00Z (rollback 2 in a row)"
    pod_group["status"] = {
        "conditions": [
            {
                "type": "PodGroupScheduled",
                "status": "False",
                "reason": "RolledBack",
                "message": said,
            }
        ],
        "lifecycle": {"rollbacks": 2, "backoffUntil": "2026-01-01T10:05:00Z"},
    }
    del pod["spec"]["nodeName"]
    pod["spec"]["schedulingGates"] = [{"name": "scheduling.muster.dev/gang"}]

    train = outcome(run(node(), job_body, pod_group, pod), "train")

    assert (train.scheduled, train.reason, train.message) == (False, "RolledBack", said)
    assert train.placements == {}


def test_a_preemptor_waiting_for_victims_that_are_leaving_says_so() -> None:
    job_body, pod_group, pod = running_gang("high")
    pod_group["status"]["lifecycle"] = {"rollbacks": 0, "victims": ["default/low-0"]}
    del pod["spec"]["nodeName"]
    pod["spec"]["schedulingGates"] = [{"name": "scheduling.muster.dev/gang"}]
    _, low_group, low_pod = running_gang("low")
    low_pod["metadata"]["deletionTimestamp"] = "2026-01-01T10:00:00Z"  # on its way out
    taken_down = {"status": "False", "reason": "Preempted", "message": "preempted by default/high"}
    low_group["status"] = {"conditions": [{**SCHEDULED[0], **taken_down}]}

    high = outcome(run(node(cpu="4"), job_body, pod_group, pod, low_group, low_pod), "high")

    assert high.scheduled and high.placements == {}
    assert high.message.endswith("; waiting for 1 preempted pod(s) to leave: default/low-0")


def racked(name: str, zone: str, rack: str, cpu: str) -> dict[str, Any]:
    labelled = node(name, cpu)
    labelled["metadata"]["labels"] = {"zone": zone, "rack": rack}
    return labelled


def topology(name: str, *keys: str, api_version: str = "kueue.x-k8s.io/v1beta2") -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": key} for key in keys]},
    }


def test_the_levels_come_from_a_kueue_topology_of_the_input() -> None:
    nodes = (
        racked("n1", "a", "r1", "2"),
        racked("n2", "a", "r2", "1"),
        racked("n3", "b", "r3", "2"),
        racked("n4", "b", "r4", "2"),
    )
    gang = job("train", cpu="1")
    gang["spec"]["parallelism"] = 4
    gang["metadata"]["annotations"] = {"scheduling.muster.dev/topology-preferred": "rack"}
    anywhere = outcome(run(*nodes, gang), "train")
    # no rack takes it, and without levels no zone is tried: rack by rack, anywhere
    assert set(anywhere.placements.values()) == {"n1", "n3"}
    levels = EngineConfig(topology_levels=("zone", "rack"))
    for report in (
        run(*nodes, gang, topology("t", "zone", "rack")),
        run(*nodes, gang, config=levels),
    ):
        assert set(outcome(report, "train").placements.values()) == {"n3", "n4"}
    report = run(
        *nodes,
        gang,
        topology("t", "zone", "rack"),
        topology("u", "rack"),
        topology("v", "zone", api_version="other.example/v1"),
    )
    assert set(outcome(report, "train").placements.values()) == {"n3", "n4"}
    assert [str(problem) for problem in report.warnings] == [
        "in.yaml:8: not a Kueue Topology with a node label key at each level; ignored",
        "in.yaml:7: the topology levels are taken from in.yaml:6; ignored",
    ]


def claiming(name: str, workers: int) -> dict[str, Any]:
    """A gang Job whose pods each claim one GPU from the template `one-gpu`."""
    claimed = job(name, cpu="100m")
    claimed["spec"]["parallelism"] = workers
    claimed["spec"]["template"]["spec"]["resourceClaims"] = [
        {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
    ]
    return claimed


def test_devices_in_the_input_are_claimed_and_taken_by_the_pods_placed() -> None:
    report = run(
        node("n1"),
        node("n2"),
        device_class(),
        claim_template("one-gpu"),
        resource_slice("n1", 2),
        claiming("first", 2),
        claiming("second", 1),
    )
    assert outcome(report, "first").placements == {"first-0": "n1", "first-1": "n1"}
    second = outcome(report, "second")
    assert (second.scheduled, second.reason) == (False, "Unschedulable")
    assert "cannot allocate all claims" in second.message
