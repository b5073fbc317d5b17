"""Expansion of Jobs and Workloads into the objects Muster creates."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from muster.api.expand import expand_job, expand_workload, gated_pod_template, template_names
from muster.api.optin import JobOptIn
from muster.api.podgroup import PodGroup
from muster.api.workload import Workload

GANG = JobOptIn(
    policy="gang",
    min_count=4,
    topology_key="topology.kubernetes.io/zone",
    disruption_mode="all",
    source="label",
)
BASIC = JobOptIn(
    policy="basic", min_count=None, topology_key=None, disruption_mode=None, source="label"
)


def training_job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "uid": "job-uid"},
        "spec": {
            "parallelism": 4,
            "template": {
                "metadata": {"labels": {"app": "train"}},
                "spec": {
                    "priorityClassName": "research",
                    "schedulingGates": [{"name": "other.example/gate"}],
                    "containers": [{"name": "worker", "image": "trainer"}],
                },
            },
        },
    }


JOB_OWNER = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "name": "train",
    "uid": "job-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}


def test_job_expands_to_a_workload_owned_by_the_job() -> None:
    workload = expand_job(training_job(), GANG).workload
    assert workload["metadata"]["name"] == "train"
    assert workload["metadata"]["namespace"] == "ml"
    assert workload["metadata"]["ownerReferences"] == [JOB_OWNER]
    # the TEMPLATES column of `kubectl get workloads`, set as it is created
    assert workload["metadata"]["annotations"] == {"scheduling.muster.dev/templates": "workers"}
    assert workload["spec"] == {
        "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
        "podGroupTemplates": [
            {
                "name": "workers",
                "schedulingPolicy": {"gang": {"minCount": 4}},
                "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
                "disruptionMode": {"all": {}},
                "priorityClassName": "research",
            }
        ],
    }
    Workload.from_manifest(workload)


def test_job_expands_to_a_pod_group_named_after_it() -> None:
    pod_group = expand_job(training_job(), GANG).pod_group
    assert pod_group["metadata"]["name"] == "train"
    assert pod_group["metadata"]["ownerReferences"] == [JOB_OWNER]
    assert pod_group["spec"]["workloadRef"] == {"workloadName": "train", "templateName": "workers"}
    assert pod_group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert pod_group["spec"]["priorityClassName"] == "research"
    PodGroup.from_manifest(pod_group)


def test_basic_job_expands_to_a_basic_group() -> None:
    pod_group = expand_job(training_job(), BASIC).pod_group
    assert pod_group["spec"]["schedulingPolicy"] == {"basic": {}}
    assert "schedulingConstraints" not in pod_group["spec"]


def test_offline_job_without_uid_gets_owner_reference_without_uid() -> None:
    job = training_job()
    del job["metadata"]["uid"]
    owner = expand_job(job, GANG).pod_group["metadata"]["ownerReferences"][0]
    assert "uid" not in owner
    assert owner["name"] == "train"


def test_workload_expands_to_one_group_per_template() -> None:
    workload = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "mpi", "namespace": "hpc", "uid": "wl-uid"},
        "spec": {
            "podGroupTemplates": [
                {"name": "launcher", "schedulingPolicy": {"basic": {}}},
                {
                    "name": "workers",
                    "schedulingPolicy": {"gang": {"minCount": 8}},
                    "priority": 100,
                },
            ]
        },
    }
    assert template_names(workload) == "launcher,workers"
    groups = expand_workload(workload)
    assert [group["metadata"]["name"] for group in groups] == ["mpi-launcher", "mpi-workers"]
    assert groups[1]["spec"] == {
        "schedulingPolicy": {"gang": {"minCount": 8}},
        "priority": 100,
        "workloadRef": {"workloadName": "mpi", "templateName": "workers"},
    }
    for group in groups:
        assert group["metadata"]["namespace"] == "hpc"
        assert group["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "scheduling.muster.dev/v1beta1",
                "kind": "Workload",
                "name": "mpi",
                "uid": "wl-uid",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        PodGroup.from_manifest(group)


def test_gang_template_is_labelled_and_gated_keeping_what_was_there() -> None:
    template = gated_pod_template(training_job(), GANG)
    assert template["metadata"]["labels"] == {
        "app": "train",
        "scheduling.muster.dev/pod-group": "train",
    }
    assert template["spec"]["schedulingGates"] == [
        {"name": "other.example/gate"},
        {"name": "scheduling.muster.dev/gang"},
    ]


def test_basic_template_is_labelled_but_not_gated() -> None:
    template = gated_pod_template(training_job(), BASIC)
    assert template["metadata"]["labels"]["scheduling.muster.dev/pod-group"] == "train"
    assert template["spec"]["schedulingGates"] == [{"name": "other.example/gate"}]


def test_gating_is_idempotent_and_leaves_the_job_untouched() -> None:
    job = training_job()
    original = copy.deepcopy(job)
    once = gated_pod_template(job, GANG)
    assert job == original
    job["spec"]["template"] = once
    assert gated_pod_template(job, GANG) == once


def test_template_without_metadata_gets_some() -> None:
    job = training_job()
    del job["spec"]["template"]["metadata"]
    del job["spec"]["template"]["spec"]["schedulingGates"]
    template = gated_pod_template(job, GANG)
    assert template["metadata"] == {"labels": {"scheduling.muster.dev/pod-group": "train"}}
    assert template["spec"]["schedulingGates"] == [{"name": "scheduling.muster.dev/gang"}]


def test_a_jobs_expected_runtime_and_deadline_are_copied_onto_its_pod_group() -> None:
    job = training_job()
    job["metadata"]["annotations"] = {"scheduling.muster.dev/expected-runtime": "90m"}
    job["spec"]["activeDeadlineSeconds"] = 7200
    pod_group = expand_job(job, GANG).pod_group
    assert pod_group["metadata"]["annotations"] == {
        "scheduling.muster.dev/expected-runtime": "90m",
        "scheduling.muster.dev/active-deadline-seconds": "7200",
    }
    PodGroup.from_manifest(pod_group)
    assert "annotations" not in expand_job(training_job(), GANG).pod_group["metadata"]


def test_a_preferred_level_travels_from_a_job_or_workload_to_its_pod_groups() -> None:
    preferred = {"scheduling.muster.dev/topology-preferred": "example.com/rack"}
    job = training_job()
    job["metadata"]["annotations"] = dict(preferred)
    assert expand_job(job, GANG).pod_group["metadata"]["annotations"] == preferred
    workload: dict[str, Any] = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "mpi", "namespace": "hpc", "annotations": dict(preferred)},
        "spec": {
            "podGroupTemplates": [
                {"name": "a", "schedulingPolicy": {"basic": {}}},
                {"name": "b", "schedulingPolicy": {"gang": {"minCount": 2}}},
            ]
        },
    }
    groups = expand_workload(workload)
    assert [group["metadata"]["annotations"] for group in groups] == [preferred, preferred]
    del workload["metadata"]["annotations"]
    assert all("annotations" not in group["metadata"] for group in expand_workload(workload))


def test_a_cron_jobs_job_names_its_cron_job_on_its_pod_group() -> None:
    job = training_job()
    job["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "controller": True},
    ]
    pod_group = expand_job(job, GANG).pod_group
    assert pod_group["metadata"]["annotations"] == {"scheduling.muster.dev/cron-job": "nightly"}
    job["metadata"]["ownerReferences"][0]["controller"] = False  # owned, not controlled
    assert "annotations" not in expand_job(job, GANG).pod_group["metadata"]


def test_a_template_gated_for_the_native_field_says_so() -> None:
    template = gated_pod_template(training_job(), replace(GANG, source="field"))
    assert template["metadata"]["annotations"] == {
        "scheduling.muster.dev/gated-for": "spec.scheduling"
    }
    assert template["spec"]["schedulingGates"][-1] == {"name": "scheduling.muster.dev/gang"}


def test_only_a_gate_put_there_for_the_field_is_marked() -> None:
    for opt_in in (GANG, replace(BASIC, source="field")):
        assert "annotations" not in gated_pod_template(training_job(), opt_in)["metadata"]
