"""Validation beyond the table: updates, priority classes, the name syntaxes."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.problems import Problem
from muster.api.validation import validate_job, validate_pod_group, validate_workload


def pod_group(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g"},
        "spec": spec,
    }


GANG: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
BASIC: dict[str, Any] = {"schedulingPolicy": {"basic": {}}}
REF = {"workloadName": "mpi", "templateName": "workers"}


def test_min_count_may_change() -> None:
    new = pod_group({"schedulingPolicy": {"gang": {"minCount": 5}}})
    assert validate_pod_group(new, old=pod_group(GANG)) == []


def test_policy_kind_may_not_change() -> None:
    assert validate_pod_group(pod_group(BASIC), old=pod_group(GANG)) == [
        Problem(
            "spec.schedulingPolicy",
            "schedulingPolicy kind (basic or gang) is immutable; only gang.minCount may change",
        )
    ]


def test_policy_kind_is_not_checked_on_create() -> None:
    assert validate_pod_group(pod_group(BASIC)) == []


@pytest.mark.parametrize(
    ("old_ref", "new_ref"),
    [(REF, None), (None, REF), (REF, {**REF, "templateName": "launcher"})],
)
def test_workload_ref_may_not_change(
    old_ref: dict[str, str] | None, new_ref: dict[str, str] | None
) -> None:
    old = pod_group({**GANG, **({"workloadRef": old_ref} if old_ref else {})})
    new = pod_group({**GANG, **({"workloadRef": new_ref} if new_ref else {})})
    assert validate_pod_group(new, old=old) == [
        Problem("spec.workloadRef", "workloadRef is immutable")
    ]


def test_template_policy_kind_is_compared_by_template_name() -> None:
    def workload(*templates: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.muster.dev/v1beta1",
            "kind": "Workload",
            "metadata": {"name": "w"},
            "spec": {
                "podGroupTemplates": [
                    {"name": name, "schedulingPolicy": policy} for name, policy in templates
                ]
            },
        }

    basic, gang = BASIC["schedulingPolicy"], GANG["schedulingPolicy"]
    old = workload(("a", basic), ("b", gang))
    assert validate_workload(workload(("b", gang), ("a", basic)), old=old) == []
    assert validate_workload(workload(("a", gang), ("b", gang)), old=old) == [
        Problem(
            "spec.podGroupTemplates[0].schedulingPolicy",
            "schedulingPolicy kind (basic or gang) is immutable; only gang.minCount may change",
        )
    ]


def test_priority_class_must_exist_when_a_lookup_is_given() -> None:
    manifest = pod_group({**GANG, "priorityClassName": "research"})
    assert validate_pod_group(manifest) == []
    assert validate_pod_group(manifest, priority_class_exists=lambda name: True) == []
    assert validate_pod_group(manifest, priority_class_exists=lambda name: False) == [
        Problem("spec.priorityClassName", 'PriorityClass "research" not found')
    ]


def test_missing_name_is_reported() -> None:
    manifest = pod_group(GANG)
    del manifest["metadata"]
    assert validate_pod_group(manifest) == [Problem("metadata.name", "Required value")]


def test_a_spec_of_the_wrong_type_is_one_problem() -> None:
    assert validate_pod_group({**pod_group(GANG), "spec": "gang"}) == [
        Problem("spec", 'Invalid value: "gang": must be of type object')
    ]


PREFERRED = "scheduling.muster.dev/topology-preferred"


@pytest.mark.parametrize(
    ("value", "refused"),
    [("example.com/rack", False), ("rack", False), ("not a key", True), ("/rack", True), (3, True)],
)
def test_a_preferred_level_must_be_a_label_key(value: object, refused: bool) -> None:
    group = pod_group(GANG)
    group["metadata"]["annotations"] = {PREFERRED: value}
    workload = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w", "annotations": {PREFERRED: value}},
        "spec": {"podGroupTemplates": [{"name": "t", **GANG}]},
    }
    field = f"metadata.annotations[{PREFERRED}]"
    for problems in (validate_pod_group(group), validate_workload(workload)):
        assert any(problem.path == field for problem in problems) is refused


def test_an_opted_in_jobs_preferred_level_is_checked_and_others_are_left_alone() -> None:
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "annotations": {PREFERRED: "not a key"}},
        "spec": {"parallelism": 2, "template": {"spec": {"containers": []}}},
    }
    assert validate_job(job) == []
    job["metadata"]["labels"] = {"scheduling.muster.dev/policy": "gang"}
    assert [problem.path for problem in validate_job(job)] == [f"metadata.annotations[{PREFERRED}]"]
