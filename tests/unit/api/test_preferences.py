"""The preferred level's annotation, and the levels of a Kueue Topology."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.preferences import (
    carried_preference,
    declared_levels,
    declared_topology,
    kueue_levels,
)

PREFERRED = "scheduling.muster.dev/topology-preferred"


def topology(levels: Any, api_version: str = "kueue.x-k8s.io/v1beta2") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "Topology", "spec": {"levels": levels}}


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (
            topology([{"nodeLabel": "zone"}, {"nodeLabel": "example.com/rack"}]),
            ("zone", "example.com/rack"),
        ),
        (topology([{"nodeLabel": "zone"}], "kueue.x-k8s.io/v1alpha1"), ("zone",)),
        (topology([{"nodeLabel": "zone"}], "other.example/v1"), None),
        (topology([]), None),
        (topology([{"nodeLabel": "not a key"}]), None),
        (topology([{}]), None),
        (topology("zone"), None),
        ({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor"}, None),
    ],
)
def test_the_levels_of_a_kueue_topology(manifest: dict[str, Any], expected: object) -> None:
    assert kueue_levels(manifest) == expected


def test_only_the_preferred_level_is_carried() -> None:
    annotations = {PREFERRED: "rack", "other": "x"}
    assert carried_preference({"metadata": {"annotations": annotations}}) == {PREFERRED: "rack"}
    assert carried_preference({"metadata": {}}) == {}
    assert carried_preference({}) == {}


def test_the_levels_of_the_first_kueue_topology_by_name_else_the_configured_ones() -> None:
    configured = ("zone", "rack")
    assert declared_levels({}, configured) == configured
    topologies = {"pool-b": ("zone", "block"), "pool-a": ("region", "zone")}
    assert declared_topology(topologies) == "pool-a"
    assert declared_levels(topologies, configured) == ("region", "zone")
