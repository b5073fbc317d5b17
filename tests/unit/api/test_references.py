"""A new PodGroup's workloadRef: a missing Workload or template, or a Workload being
deleted, is Forbidden with the reference named; a good reference, or none, passes."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.problems import Problem
from muster.api.references import is_forbidden, referable_part, workload_ref_problems

WORKLOAD = {
    "kind": "Workload",
    "metadata": {"name": "mpi"},
    "spec": {"podGroupTemplates": [{"name": "workers"}, {"name": "launcher"}]},
}


def pod_group(ref: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    if ref is not None:
        spec["workloadRef"] = ref
    return {"kind": "PodGroup", "metadata": {"name": "g"}, "spec": spec}


def problems(ref: dict[str, str] | None, workload: dict[str, Any] | None) -> list[Problem]:
    return workload_ref_problems(pod_group(ref), lambda name: workload)


def test_a_good_reference_or_none_passes() -> None:
    assert problems({"workloadName": "mpi", "templateName": "launcher"}, WORKLOAD) == []
    assert problems(None, None) == []


def test_a_missing_workload_is_forbidden() -> None:
    assert problems({"workloadName": "mpii", "templateName": "workers"}, None) == [
        Problem("spec.workloadRef.workloadName", 'Forbidden: Workload "mpii" not found')
    ]


def test_a_missing_template_is_forbidden() -> None:
    assert problems({"workloadName": "mpi", "templateName": "worker"}, WORKLOAD) == [
        Problem(
            "spec.workloadRef.templateName",
            'Forbidden: Workload "mpi" has no podGroupTemplate "worker"',
        )
    ]


def test_a_workload_being_deleted_is_forbidden() -> None:
    leaving = {**WORKLOAD, "metadata": {"name": "mpi", "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    (problem,) = problems({"workloadName": "mpi", "templateName": "workers"}, leaving)
    assert problem == Problem(
        "spec.workloadRef.workloadName", 'Forbidden: Workload "mpi" is being deleted'
    )
    assert is_forbidden(problem)


LEAVING = {**WORKLOAD, "metadata": {"name": "mpi", "deletionTimestamp": "2026-01-01T00:00:00Z"}}
ODD = {"kind": "Workload", "spec": {"podGroupTemplates": [{"name": 3}, "x", {"name": "workers"}]}}


@pytest.mark.parametrize("workload", [WORKLOAD, LEAVING, ODD, {"spec": None}, {}])
@pytest.mark.parametrize("template", ["workers", "launcher", "worker"])
def test_the_part_of_a_workload_kept_for_admission_answers_as_the_whole(
    workload: dict[str, Any], template: str
) -> None:
    ref = {"workloadName": "mpi", "templateName": template}
    assert problems(ref, dict(referable_part(workload))) == problems(ref, workload)
