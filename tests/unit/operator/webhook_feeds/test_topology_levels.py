"""The topology levels admission holds a preference to, as the watch of Topologies tells them."""

from __future__ import annotations

from muster.api.wire import JsonObject
from muster.operator.webhook_feeds.topology_levels import TopologyLevels

CONFIGURED = ("zone", "rack")


def topology(name: str, *keys: str, group: str = "kueue.x-k8s.io") -> JsonObject:
    return {
        "apiVersion": f"{group}/v1beta2",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": key} for key in keys]},
    }


def test_a_kueue_topology_overrides_the_configured_levels_until_it_is_deleted() -> None:
    levels = TopologyLevels(CONFIGURED)
    assert levels.levels() == CONFIGURED
    assert levels.upsert(topology("pool-b", "zone", "block", "rack")) is False
    assert levels.levels() == ("zone", "block", "rack")
    levels.upsert(topology("pool-a", "region", "zone"))
    assert levels.levels() == ("region", "zone")  # the first by name, as the engine takes it
    levels.upsert(topology("pool-a", "zone", group="example.com"))  # no longer Kueue's
    assert levels.levels() == ("zone", "block", "rack")
    assert levels.remove(topology("pool-b")) is False
    assert levels.levels() == CONFIGURED
