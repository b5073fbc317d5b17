"""Every PriorityClass kept for admission, by name, as a watch tells them."""

from __future__ import annotations

from muster.operator.webhook_feeds.priority_classes import PriorityClassStore
from tests.unit.scheduler.builders import priority_class


async def test_classes_are_kept_replaced_and_removed_by_name_and_never_poke_a_cycle() -> None:
    store = PriorityClassStore()
    assert store.upsert(priority_class("low", 10)) is False
    assert store.upsert(priority_class("high", 1000)) is False
    assert store.upsert(priority_class("low", 20)) is False
    assert sorted(item["value"] for item in await store.list()) == [20, 1000]
    assert store.remove(priority_class("high", 1000)) is False
    assert store.remove(priority_class("gone", 1)) is False
    assert [item["metadata"]["name"] for item in await store.list()] == ["low"]
