"""The policy, constraints and disruption mode a PodGroup and a Workload template share."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from muster.api.policy import (
    DisruptionMode,
    PodGroupSchedulingConstraints,
    PodGroupSchedulingPolicy,
)


@pytest.mark.parametrize(
    ("manifest", "gang"),
    [({"basic": {}}, False), ({"gang": {"minCount": 4}}, True)],
)
def test_a_policy_is_gang_or_basic(manifest: dict[str, object], gang: bool) -> None:
    policy = PodGroupSchedulingPolicy.from_manifest(manifest)
    assert policy.is_gang is gang
    assert policy.to_manifest() == manifest


def test_shapes_follow_upstream_and_refuse_what_it_does_not_know() -> None:
    constraints = {"topology": [{"key": "topology.kubernetes.io/zone"}]}
    assert PodGroupSchedulingConstraints.from_manifest(constraints).to_manifest() == constraints
    assert DisruptionMode.from_manifest({"single": {}}).to_manifest() == {"single": {}}
    with pytest.raises(ValidationError):
        PodGroupSchedulingPolicy.from_manifest({"gang": {"minCount": 2, "maxCount": 3}})
