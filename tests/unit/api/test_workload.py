"""The Workload model: one to eight templates, each the shape of one PodGroup."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from muster.api.constants import MAX_POD_GROUP_TEMPLATES
from muster.api.workload import Workload


def workload(*templates: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
            "podGroupTemplates": [
                {"name": name, "schedulingPolicy": {"gang": {"minCount": 2}}} for name in templates
            ],
        },
    }


def test_a_workload_round_trips() -> None:
    manifest = workload("workers", "driver")
    parsed = Workload.from_manifest(manifest)
    assert [template.name for template in parsed.spec.pod_group_templates] == ["workers", "driver"]
    assert parsed.to_manifest() == manifest


@pytest.mark.parametrize("count", [0, MAX_POD_GROUP_TEMPLATES + 1])
def test_a_workload_has_one_to_eight_templates(count: int) -> None:
    with pytest.raises(ValidationError, match="podGroupTemplates"):
        Workload.from_manifest(workload(*(f"t{index}" for index in range(count))))


def test_a_template_field_upstream_does_not_have_is_refused() -> None:
    manifest = workload("workers")
    manifest["spec"]["podGroupTemplates"][0]["replicas"] = 3
    with pytest.raises(ValidationError, match="replicas"):
        Workload.from_manifest(manifest)
