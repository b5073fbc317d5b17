"""The label keys the nodes carry, as the watch of Nodes tells them."""

from __future__ import annotations

from muster.api.wire import JsonObject
from muster.operator.webhook_feeds.node_labels import NodeLabelKeys


def node(name: str, *keys: str) -> JsonObject:
    return {"metadata": {"name": name, "labels": {key: "v" for key in keys}}}


def test_a_key_is_carried_while_some_node_carries_it() -> None:
    keys = NodeLabelKeys()
    assert keys.carried == frozenset()
    assert keys.upsert(node("n1", "zone", "rack")) is False  # scheduling does not care
    keys.upsert(node("n2", "zone"))
    assert keys.carried == {"zone", "rack"}
    keys.upsert(node("n1", "zone"))  # n1 loses its rack label
    assert keys.carried == {"zone"}
    assert keys.remove(node("n2")) is False
    assert keys.carried == {"zone"}
    keys.remove(node("n1"))
    assert keys.carried == frozenset()


def test_the_set_read_by_the_webhooks_is_replaced_never_changed() -> None:
    """They read it from another thread: a heartbeat (same keys) leaves it as it is."""
    keys = NodeLabelKeys()
    keys.upsert(node("n1", "zone"))
    before = keys.carried
    keys.upsert(node("n1", "zone"))
    keys.upsert(node("n2", "zone"))
    assert keys.carried is before
    keys.upsert(node("n2", "zone", "rack"))
    assert keys.carried is not before and before == {"zone"}


def test_a_node_without_labels() -> None:
    keys = NodeLabelKeys()
    keys.upsert({"metadata": {"name": "n1", "labels": None}})
    keys.remove({"metadata": {"name": "unknown"}})
    assert keys.carried == frozenset()
