"""The validating webhooks refuse with every problem, and warn when the field wins."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import kopf
import pytest

from muster.api.problems import Problem
from muster.webhooks.priority import PRIORITY_CLASSES_MEMO
from muster.webhooks.validation import (
    check_job,
    check_pod_group,
    check_workload,
    refuse_missing_priority_class,
)
from muster.webhooks.workloads import reference_problems


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


REF = {"workloadRef": {"workloadName": "mpi", "templateName": "workers"}}


class Memo:
    """A kopf memo holding a source of Workloads whose cache may lag."""

    def __init__(self, cached: dict[str, Any] | None, live: dict[str, Any] | None) -> None:
        self.workloads = self
        self.answers = {"cached": cached, "live": live}
        self.asked: list[str] = []

    async def cached(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.asked.append(f"cached {namespace}/{name}")
        return self.answers["cached"]

    async def live(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.asked.append(f"live {namespace}/{name}")
        return self.answers["live"]


WORKLOAD = {
    "kind": "Workload",
    "metadata": {"name": "mpi"},
    "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"basic": {}}}]},
}


async def test_a_reference_the_cache_honours_costs_no_api_call() -> None:
    memo = Memo(cached=WORKLOAD, live=None)
    assert await reference_problems(pod_group({**GANG, **REF}), "ml", memo) == []
    assert memo.asked == ["cached ml/mpi"]


async def test_a_reference_missing_from_the_cache_is_confirmed_live() -> None:
    memo = Memo(cached=None, live=WORKLOAD)
    assert await reference_problems(pod_group({**GANG, **REF}), "ml", memo) == []
    assert memo.asked == ["cached ml/mpi", "live ml/mpi"]


async def test_a_missing_workload_is_refused_as_forbidden() -> None:
    problems = await reference_problems(pod_group({**GANG, **REF}), "ml", Memo(None, None))
    with pytest.raises(kopf.AdmissionError) as refusal:
        check_pod_group(pod_group({**GANG, **REF}), None, set(), problems)
    assert refusal.value.code == 403
    assert (
        str(refusal.value) == 'spec.workloadRef.workloadName: Forbidden: Workload "mpi" not found'
    )


def test_a_forbidden_reference_beside_an_invalid_field_is_invalid() -> None:
    forbidden = [Problem("spec.workloadRef.workloadName", 'Forbidden: Workload "mpi" not found')]
    spec = {"schedulingPolicy": {"gang": {"minCount": 0}}, **REF}
    with pytest.raises(kopf.AdmissionError) as refusal:
        check_pod_group(pod_group(spec), None, set(), forbidden)
    assert refusal.value.code == 422


async def test_without_a_source_of_workloads_admission_cannot_decide() -> None:
    with pytest.raises(kopf.AdmissionError) as refusal:
        await reference_problems(pod_group({**GANG, **REF}), "ml", object())
    assert refusal.value.code == 503


def test_a_preferred_level_must_be_one_of_the_operators_levels_when_it_has_some() -> None:
    levels = ("zone", "example.com/rack")
    preferred = "scheduling.muster.dev/topology-preferred"
    group = pod_group(GANG)
    group["metadata"]["annotations"] = {preferred: "example.com/rak"}
    check_pod_group(group, None, None)  # no levels: any label key
    with pytest.raises(kopf.AdmissionError) as raised:
        check_pod_group(group, None, None, levels=levels)
    assert str(raised.value) == (
        f'metadata.annotations[{preferred}]: "example.com/rak" is not a topology level: '
        "zone, example.com/rack"
    )
    check_pod_group(group, group, None, levels=levels)  # kept as it was: not refused
    opted_in = job({"scheduling.muster.dev/policy": "gang"}, {preferred: "example.com/rak"}, {})
    with pytest.raises(kopf.AdmissionError):
        check_job(opted_in, [], None, levels)
    opted_in["metadata"]["annotations"][preferred] = "example.com/rack"
    check_job(opted_in, [], None, levels)


def test_slices_the_engine_cannot_honour_are_refused_with_the_field_named() -> None:
    levels = ("zone", "example.com/block", "example.com/rack")
    group = pod_group(GANG)
    group["metadata"]["annotations"] = {
        "scheduling.muster.dev/topology-slice": "example.com/rack",
        "scheduling.muster.dev/topology-slice-size": "0",
    }
    with pytest.raises(kopf.AdmissionError) as raised:
        check_pod_group(group, None, None, levels=levels)
    assert str(raised.value) == (
        "metadata.annotations[scheduling.muster.dev/topology-slice-size]: "
        '"0" is not a positive integer'
    )
    group["metadata"]["annotations"]["scheduling.muster.dev/topology-slice-size"] = "1"
    check_pod_group(group, None, None, levels=levels)


async def test_a_new_opted_in_job_whose_pods_name_a_missing_class_is_refused() -> None:
    """Refused naming the field and the class (its PodGroup could not be made); a Job
    that has not opted in is left to the API server."""

    async def classes() -> list[dict[str, Any]]:
        return [{"metadata": {"name": "high"}, "value": 1000}]

    memo = SimpleNamespace(**{PRIORITY_CLASSES_MEMO: classes})
    gang = {"scheduling.muster.dev/policy": "gang"}
    research = {"template": {"spec": {"containers": [], "priorityClassName": "research"}}}
    expected = r'spec\.template\.spec\.priorityClassName: PriorityClass "research" not found'
    with pytest.raises(kopf.AdmissionError, match=expected):
        await refuse_missing_priority_class(job(gang, {}, research), memo)
    await refuse_missing_priority_class(job({}, {}, research), memo)
    high = {"template": {"spec": {"containers": [], "priorityClassName": "high"}}}
    await refuse_missing_priority_class(job(gang, {}, high), memo)
