"""The models read and write manifests faithfully: every example round-trips."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from muster.api.constants import API_VERSION, POD_GROUP_KIND, WORKLOAD_KIND
from muster.api.expand import expand_job, expand_workload
from muster.api.manifests import parse_manifests
from muster.api.optin import read_job_opt_in
from muster.api.podgroup import PodGroup, PodGroupSpec
from muster.api.workload import Workload

EXAMPLES = sorted((Path(__file__).parents[3] / "examples").glob("*.yaml"))


def example_documents(kind: str) -> list[dict[str, Any]]:
    return [
        document.body
        for path in EXAMPLES
        for document in parse_manifests(path.read_text())
        if document.body["kind"] == kind
    ]


@pytest.mark.parametrize("manifest", example_documents("PodGroup"))
def test_pod_group_examples_round_trip(manifest: dict[str, Any]) -> None:
    assert PodGroup.from_manifest(manifest).to_manifest() == manifest


@pytest.mark.parametrize("manifest", example_documents("Workload"))
def test_workload_examples_round_trip(manifest: dict[str, Any]) -> None:
    assert Workload.from_manifest(manifest).to_manifest() == manifest
    for pod_group in expand_workload(manifest):
        assert PodGroup.from_manifest(pod_group).to_manifest() == pod_group


@pytest.mark.parametrize("manifest", example_documents("Job"))
def test_job_examples_opt_in_and_expand_to_valid_objects(manifest: dict[str, Any]) -> None:
    opt_in = read_job_opt_in(manifest)
    assert opt_in is not None
    assert (opt_in.policy, opt_in.min_count) == ("gang", 4)
    expansion = expand_job(manifest, opt_in)
    assert Workload.from_manifest(expansion.workload).to_manifest() == expansion.workload
    assert PodGroup.from_manifest(expansion.pod_group).to_manifest() == expansion.pod_group


def test_examples_cover_the_contract() -> None:
    assert len(example_documents("PodGroup")) >= 1
    assert len(example_documents("Workload")) >= 1
    assert len(example_documents("PriorityClass")) >= 1
    jobs = example_documents("Job")
    sources = {opt_in.source for opt_in in map(read_job_opt_in, jobs) if opt_in is not None}
    assert sources == {"label", "field"}


def test_status_round_trips_with_its_times() -> None:
    manifest = {
        "apiVersion": API_VERSION,
        "kind": POD_GROUP_KIND,
        "metadata": {"name": "g", "uid": "123", "managedFields": [{"manager": "kubectl"}]},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
        "status": {
            "conditions": [
                {
                    "type": "PodGroupScheduled",
                    "status": "True",
                    "reason": "Scheduled",
                    "message": "",
                    "lastTransitionTime": "2026-11-30T04:00:00Z",
                    "observedGeneration": 1,
                }
            ],
            "minCount": 2,
            "pods": {
                "total": 2,
                "gated": 0,
                "scheduled": 2,
                "running": 1,
                "succeeded": 1,
                "failed": 0,
            },
            "plan": {"g-0": "node-a", "g-1": "node-b"},
            "admittedAt": "2026-11-30T04:00:00Z",
        },
    }
    pod_group = PodGroup.from_manifest(manifest)
    assert pod_group.status is not None
    assert pod_group.status.plan == {"g-0": "node-a", "g-1": "node-b"}
    assert pod_group.to_manifest() == manifest


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ValidationError, match="minCont"):
        PodGroupSpec.from_manifest({"schedulingPolicy": {"gang": {"minCont": 2}}})


def test_kind_constants_match_the_models() -> None:
    assert PodGroup.model_fields["api_version"].default == API_VERSION
    assert PodGroup.model_fields["kind"].default == POD_GROUP_KIND
    assert Workload.model_fields["api_version"].default == API_VERSION
    assert Workload.model_fields["kind"].default == WORKLOAD_KIND
