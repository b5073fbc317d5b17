"""The slice annotations as admission and `muster validate` check them."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.preferences import carried_preference
from muster.api.problems import Problem
from muster.api.slices import GangShape, slice_problems
from muster.api.validation import validate_job, validate_pod_group, validate_workload

SLICE = "scheduling.muster.dev/topology-slice"
SIZE = "scheduling.muster.dev/topology-slice-size"
PREFERRED = "scheduling.muster.dev/topology-preferred"
SLICE_FIELD = f"metadata.annotations[{SLICE}]"
SIZE_FIELD = f"metadata.annotations[{SIZE}]"
LEVELS = ("zone", "block", "rack")


def annotated(**annotations: str) -> dict[str, Any]:
    return {"metadata": {"annotations": annotations}}


def fields(problems: list[Problem]) -> list[str]:
    return [problem.path for problem in problems]


def test_no_slice_annotation_no_problem() -> None:
    assert slice_problems(annotated(), [GangShape(8, None)], LEVELS) == []


@pytest.mark.parametrize(
    ("annotations", "gang", "expected"),
    [
        ({SLICE: "rack", SIZE: "4"}, GangShape(8, "zone"), []),
        ({SLICE: "rack", SIZE: "4", PREFERRED: "rack"}, GangShape(8, None), []),
        ({SIZE: "4"}, GangShape(8, None), [SLICE_FIELD]),
        ({SLICE: "rack"}, GangShape(8, None), [SIZE_FIELD]),
        ({SLICE: "not a key", SIZE: "4"}, GangShape(8, None), [SLICE_FIELD]),
        ({SLICE: "row", SIZE: "4"}, GangShape(8, None), [SLICE_FIELD]),
        ({SLICE: "zone", SIZE: "4", PREFERRED: "block"}, GangShape(8, None), [SLICE_FIELD]),
        ({SLICE: "block", SIZE: "4"}, GangShape(8, "rack"), [SLICE_FIELD]),
        ({SLICE: "rack", SIZE: "0"}, GangShape(8, None), [SIZE_FIELD]),
        ({SLICE: "rack", SIZE: "9" * 5000}, GangShape(8, None), [SIZE_FIELD]),
        ({SLICE: "rack", SIZE: "3"}, GangShape(8, None), [SIZE_FIELD]),
        ({SLICE: "rack", SIZE: "3"}, GangShape(None, None), []),  # a basic group
    ],
)
def test_what_is_refused_names_its_field(
    annotations: dict[str, str], gang: GangShape, expected: list[str]
) -> None:
    assert fields(slice_problems(annotated(**annotations), [gang], LEVELS)) == expected


def test_the_messages_say_why() -> None:
    wider = slice_problems(annotated(**{SLICE: "block", SIZE: "4"}), [GangShape(8, "rack")], LEVELS)
    assert wider[0].message == (
        '"block" is wider than "rack", the level the gang requires: '
        "a slice must fit in the gang's domain"
    )
    uneven = slice_problems(annotated(**{SLICE: "rack", SIZE: "3"}), [GangShape(8, None)])
    assert uneven[0].message == (
        "3 does not divide the minCount of the gang (8): a gang is whole slices"
    )


def test_without_levels_only_the_key_and_size_are_checked() -> None:
    assert slice_problems(annotated(**{SLICE: "row", SIZE: "4"}), [GangShape(8, None)]) == []


def test_a_slice_level_kept_on_update_is_not_held_to_new_levels() -> None:
    old = annotated(**{SLICE: "row", SIZE: "4"})
    new = annotated(**{SLICE: "row", SIZE: "2"})
    assert slice_problems(new, [GangShape(8, None)], LEVELS, old) == []


def test_pod_groups_workloads_and_jobs_are_checked() -> None:
    gang = {"schedulingPolicy": {"gang": {"minCount": 6}}}
    group = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "d", "annotations": {SLICE: "rack", SIZE: "4"}},
        "spec": gang,
    }
    assert fields(validate_pod_group(group, topology_levels=LEVELS)) == [SIZE_FIELD]
    workload = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w", "annotations": {SLICE: "rack", SIZE: "4"}},
        "spec": {"podGroupTemplates": [{"name": "a", **gang}, {"name": "b", **gang}]},
    }
    problems = validate_workload(workload, topology_levels=LEVELS)
    assert [problem.message.split(":")[0] for problem in problems] == [
        "4 does not divide the minCount of template a (6)",
        "4 does not divide the minCount of template b (6)",
    ]
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "annotations": {SLICE: "rack", SIZE: "4"}},
        "spec": {"parallelism": 6, "template": {"spec": {"containers": []}}},
    }
    assert validate_job(job, topology_levels=LEVELS) == []  # not opted in: not ours
    job["metadata"]["labels"] = {"scheduling.muster.dev/policy": "gang"}
    assert fields(validate_job(job, topology_levels=LEVELS)) == [SIZE_FIELD]


def test_the_slice_annotations_are_carried_with_the_preferred_level() -> None:
    annotations = {SLICE: "rack", SIZE: "4", PREFERRED: "block", "other": "x"}
    assert carried_preference({"metadata": {"annotations": annotations}}) == {
        PREFERRED: "block",
        SLICE: "rack",
        SIZE: "4",
    }
