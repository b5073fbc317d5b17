"""The validating webhooks refuse with every problem, and warn when the field wins."""

from __future__ import annotations

from typing import Any

import kopf
import pytest

from muster.webhooks.validation import check_job, check_pod_group, check_workload


def pod_group(spec: dict[str, Any]) -> kopf.Body:
    return kopf.Body(
        {
            "apiVersion": "scheduling.muster.dev/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "g"},
            "spec": spec,
        }
    )


def job(labels: dict[str, str], annotations: dict[str, str], spec: dict[str, Any]) -> kopf.Body:
    return kopf.Body(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j", "labels": labels, "annotations": annotations},
            "spec": {"parallelism": 4, "template": {"spec": {"containers": []}}, **spec},
        }
    )


GANG = {"schedulingPolicy": {"gang": {"minCount": 2}}}


def test_pod_group_with_an_existing_class_is_admitted() -> None:
    check_pod_group(pod_group({**GANG, "priorityClassName": "research"}), None, {"research"})


def test_pod_group_with_a_missing_class_is_refused() -> None:
    with pytest.raises(kopf.AdmissionError) as raised:
        check_pod_group(pod_group({**GANG, "priorityClassName": "gold"}), None, {"research"})
    assert str(raised.value) == 'spec.priorityClassName: PriorityClass "gold" not found'
    assert raised.value.code == 422


def test_pod_group_class_is_not_looked_up_again_on_update() -> None:
    spec = {**GANG, "priorityClassName": "deleted-since"}
    check_pod_group(pod_group(spec), pod_group(spec), None)


def test_pod_group_policy_change_is_refused_on_update() -> None:
    new = pod_group({"schedulingPolicy": {"basic": {}}})
    with pytest.raises(kopf.AdmissionError, match="immutable"):
        check_pod_group(new, pod_group(GANG), None)


def test_workload_problems_are_all_listed() -> None:
    workload = kopf.Body(
        {
            "apiVersion": "scheduling.muster.dev/v1beta1",
            "kind": "Workload",
            "metadata": {"name": "w"},
            "spec": {"podGroupTemplates": [{"name": "A", "schedulingPolicy": {}}]},
        }
    )
    with pytest.raises(kopf.AdmissionError) as raised:
        check_workload(workload, None)
    assert str(raised.value).count("; ") == 1


def test_labelled_job_with_a_bad_min_count_is_refused() -> None:
    bad = job(
        {"scheduling.muster.dev/policy": "gang"}, {"scheduling.muster.dev/min-count": "9"}, {}
    )
    with pytest.raises(kopf.AdmissionError, match=r"9 exceeds spec\.parallelism 4"):
        check_job(bad, [])


def test_native_job_with_a_bad_min_count_is_refused() -> None:
    bad = job({}, {}, {"scheduling": {"schedulingPolicy": {"gang": {"minCount": 5}}}})
    with pytest.raises(
        kopf.AdmissionError,
        match=r"spec\.scheduling\.schedulingPolicy\.gang\.minCount: 5 exceeds spec\.parallelism 4",
    ):
        check_job(bad, [])


def test_field_over_label_is_admitted_with_a_warning() -> None:
    both = job(
        {"scheduling.muster.dev/policy": "basic"},
        {},
        {"scheduling": {"schedulingPolicy": {"gang": {}}}},
    )
    warnings: list[str] = []
    check_job(both, warnings)
    assert warnings == [
        "spec.scheduling takes precedence: the label scheduling.muster.dev/policy and its"
        " annotations are ignored"
    ]


def test_a_valid_labelled_job_has_no_warning() -> None:
    warnings: list[str] = []
    check_job(job({"scheduling.muster.dev/policy": "gang"}, {}, {}), warnings)
    assert warnings == []
