from __future__ import annotations

from typing import Any

import pytest

from muster.api.constants import COMPLETION_INDEX_KEY, GANG_GATE, POD_GROUP_LABEL, POLICY_LABEL
from muster.simulation.documents import Document, InvalidInputError
from muster.simulation.expansion import Expansion, expand
from muster.simulation.inventory import take_inventory

CREATED = "2026-01-01T10:00:00Z"


def job(name: str = "train", *, policy: str | None = "gang", **spec: Any) -> dict[str, Any]:
    labels = {} if policy is None else {POLICY_LABEL: policy}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": CREATED},
        "spec": {
            "parallelism": 3,
            "template": {
                "metadata": {"labels": {"app": "trainer"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            **spec,
        },
    }


def pod_of_job(name: str, job_name: str = "train", phase: str = "Running") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {POD_GROUP_LABEL: job_name},
            "ownerReferences": [{"kind": "Job", "name": job_name, "controller": True}],
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": phase},
    }


def workload(controller_kind: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "podGroupTemplates": [
            {"name": "launcher", "schedulingPolicy": {"basic": {}}},
            {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}},
        ]
    }
    if controller_kind is not None:
        spec["controllerRef"] = {"apiGroup": "batch", "kind": controller_kind, "name": "w"}
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "mpi", "namespace": "hpc", "creationTimestamp": CREATED},
        "spec": spec,
    }


def expanded(*bodies: object) -> Expansion:
    documents = [Document("in.yaml", index, body) for index, body in enumerate(bodies, 1)]
    return expand(take_inventory(documents))


def problems(*bodies: object) -> list[str]:
    with pytest.raises(InvalidInputError) as caught:
        expanded(*bodies)
    return [str(problem) for problem in caught.value.problems]


def test_a_gang_job_becomes_a_pod_group_and_gated_labelled_pods() -> None:
    result = expanded(job())
    [pod_group] = result.pod_groups
    assert pod_group.origin == "in.yaml:1"
    assert pod_group.body["metadata"]["name"] == "train"
    assert pod_group.body["metadata"]["creationTimestamp"] == CREATED
    assert pod_group.body["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert [entry.name for entry in result.pods] == ["train-0", "train-1", "train-2"]
    pod = result.pods[0].body
    assert pod["metadata"]["namespace"] == "default"
    assert pod["metadata"]["labels"] == {"app": "trainer", POD_GROUP_LABEL: "train"}
    assert pod["metadata"]["creationTimestamp"] == CREATED
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert pod["spec"]["schedulingGates"] == [{"name": GANG_GATE}]
    assert pod["status"] == {"phase": "Pending"}


def test_a_basic_job_pods_are_not_gated() -> None:
    result = expanded(job(policy="basic"))
    assert "schedulingGates" not in result.pods[0].body["spec"]


def test_completions_cap_the_pods_created_at_once() -> None:
    assert len(expanded(job(parallelism=4, completions=2)).pods) == 2


def test_an_indexed_jobs_pods_carry_their_completion_index() -> None:
    pods = expanded(job(completionMode="Indexed", completions=3)).pods
    for index, pod in enumerate(pods):
        metadata = pod.body["metadata"]
        assert metadata["labels"][COMPLETION_INDEX_KEY] == str(index)
        assert metadata["annotations"][COMPLETION_INDEX_KEY] == str(index)
    assert COMPLETION_INDEX_KEY not in expanded(job()).pods[0].body["metadata"]["labels"]


def test_parallelism_defaults_to_one() -> None:
    body = job()
    del body["spec"]["parallelism"]
    assert [entry.name for entry in expanded(body).pods] == ["train-0"]


def test_a_suspended_job_has_no_pods_yet() -> None:
    result = expanded(job(suspend=True))
    assert result.pods == []
    assert len(result.pod_groups) == 1


def test_the_jobs_existing_pods_count_and_keep_their_names() -> None:
    result = expanded(job(), pod_of_job("train-1"), pod_of_job("train-x", phase="Failed"))
    names = [entry.name for entry in result.pods]
    assert names == ["train-1", "train-x", "train-0", "train-2"]


def test_succeeded_pods_count_towards_completions() -> None:
    result = expanded(job(completions=3), pod_of_job("train-0", phase="Succeeded"))
    assert [entry.name for entry in result.pods] == ["train-0", "train-1", "train-2"]


def test_an_existing_pod_group_of_the_job_is_kept() -> None:
    recorded = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "train"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
        "status": {"plan": {"train-0": "n1"}},
    }
    [pod_group] = expanded(recorded, job()).pod_groups
    assert pod_group.origin == "in.yaml:1"
    assert pod_group.body["status"] == {"plan": {"train-0": "n1"}}


def test_a_job_that_has_not_opted_in_is_ignored_with_a_warning() -> None:
    result = expanded(job(policy=None))
    assert result.pods == []
    assert result.pod_groups == []
    assert POLICY_LABEL in str(result.warnings[0])


def test_a_job_whose_opt_in_is_invalid_is_a_problem() -> None:
    [problem] = problems(job(policy="sometimes"))
    assert problem.startswith("in.yaml:1: Job train: ")
    assert '"sometimes" is not a policy' in problem


@pytest.mark.parametrize(("field", "value"), [("parallelism", -1), ("completions", "two")])
def test_a_job_with_an_invalid_count_is_a_problem(field: str, value: object) -> None:
    body = job()
    body["spec"][field] = value
    [problem] = problems(body)
    assert problem.startswith(f"in.yaml:1: Job train: spec.{field}: ")


def test_a_workload_becomes_one_pod_group_per_template() -> None:
    result = expanded(workload())
    names = [entry.name for entry in result.pod_groups]
    assert names == ["mpi-launcher", "mpi-workers"]
    assert all(entry.namespace == "hpc" for entry in result.pod_groups)
    assert result.pod_groups[1].body["metadata"]["creationTimestamp"] == CREATED


def test_a_workload_made_for_a_job_is_left_to_the_job() -> None:
    assert expanded(workload(controller_kind="Job")).pod_groups == []


def test_an_invalid_workload_is_a_problem() -> None:
    body = workload()
    body["spec"]["podGroupTemplates"] = "none"
    [problem] = problems(body)
    assert problem.startswith("in.yaml:1: Workload mpi: spec.podGroupTemplates")


def test_a_pod_of_a_pod_group_the_input_lacks_is_warned_about() -> None:
    stray = pod_of_job("stray-0", job_name="gone")
    result = expanded(stray)
    assert [str(warning) for warning in result.warnings] == [
        "in.yaml:1: Pod stray-0: PodGroup gone is not in the input"
    ]


def test_a_job_with_the_native_scheduling_field_expands_like_the_label() -> None:
    native = job(policy=None, scheduling={"schedulingPolicy": {"gang": {"minCount": 2}}})
    result = expanded(native)
    assert result.pod_groups[0].body["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    assert len(result.pods) == 3
    assert result.warnings == []
