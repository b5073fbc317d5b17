"""An admission request leaves no memory behind: each gets a fresh copy of the shared
memo, whatever kopf would keep per object."""

from __future__ import annotations

from typing import Any

import kopf

from muster.webhooks.memories import AdmissionMemories

POD: Any = {"metadata": {"uid": "u-1", "namespace": "ml", "name": "train-0"}}


async def test_every_request_gets_a_fresh_copy_of_the_shared_memo_and_nothing_is_kept() -> None:
    shared: Any = kopf.Memo(lister="every PriorityClass")
    memories = AdmissionMemories()
    first: Any = await memories.recall_memo(POD, memobase=shared)
    first.seen = True
    second: Any = await memories.recall_memo(POD, memobase=shared, ephemeral=False)
    assert second is not first and "seen" not in second
    assert second.lister == "every PriorityClass"
    assert list(memories.iter_all_memories()) == []
