"""kopf's per-object memory, never kept for an admission request.

kopf keeps a memo for every object UID an UPDATE or DELETE admission names and frees
it only when a watch of that resource sees the object go. The operator watches none
of the resources its webhooks admit through kopf (pods, Jobs, PodGroups, Workloads),
so every object ever updated would stay in memory for the life of the process. The
handlers keep nothing per object (what they read, the PriorityClass lister, is on
the shared memo), so each request gets a fresh copy of that memo and nothing stays.
"""

from __future__ import annotations

from muster.webhooks.kopf_private import ResourceMemories, bodies, ephemera


class AdmissionMemories(ResourceMemories):
    """kopf's memories, with every admission memo ephemeral."""

    async def recall_memo(
        self,
        raw_body: bodies.RawBody,
        *,
        memobase: ephemera.AnyMemo | None = None,
        ephemeral: bool = False,
    ) -> ephemera.AnyMemo:
        memory = await self.recall(raw_body=raw_body, memobase=memobase, ephemeral=True)
        return memory.memo
