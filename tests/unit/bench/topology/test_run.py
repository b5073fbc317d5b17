"""The topology benchmark's cluster: every node in one rack of one block of one zone."""

from __future__ import annotations

from bench.engine.cluster import NODES, ZONE
from bench.topology.run import BLOCK, RACK, levelled_node, preferring, sliced

from muster.api.constants import (
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_SLICE_ANNOTATION,
    TOPOLOGY_SLICE_SIZE_ANNOTATION,
)


def test_racks_nest_in_blocks_nest_in_zones() -> None:
    parents: dict[str, str] = {}
    for index in range(NODES):
        labels = levelled_node(index)["metadata"]["labels"]
        for child, parent in ((labels[RACK], labels[BLOCK]), (labels[BLOCK], labels[ZONE])):
            assert parents.setdefault(child, parent) == parent
    assert len({key for key in parents if key.startswith("rack")}) == 200
    assert len({key for key in parents if key.startswith("block")}) == 20
    assert set(parents.values()) >= {"zone-0", "zone-3"}


def test_a_preferring_gang_carries_the_annotation_on_its_pod_group() -> None:
    gang = preferring([{"metadata": {"name": "g"}}, {"metadata": {"name": "g-0"}}])
    assert gang[0]["metadata"]["annotations"] == {TOPOLOGY_PREFERRED_ANNOTATION: RACK}
    assert "annotations" not in gang[1]["metadata"]


def test_a_sliced_gang_prefers_a_block_in_slices_of_racks() -> None:
    gang = sliced([{"metadata": {"name": "g"}}], 8)
    assert gang[0]["metadata"]["annotations"] == {
        TOPOLOGY_PREFERRED_ANNOTATION: BLOCK,
        TOPOLOGY_SLICE_ANNOTATION: RACK,
        TOPOLOGY_SLICE_SIZE_ANNOTATION: "8",
    }
