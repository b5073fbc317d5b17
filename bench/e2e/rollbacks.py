"""Why the operator rolled gangs back in a run: its `RolledBack` events, by kind.

A rollback count alone says gangs were taken down, not which rule did it; each kind
here is one of the engine's reasons (`muster.scheduler.lifecycle.follow`), with pod and node
names left out and kube-scheduler's own words kept, numbers as N.
"""

from __future__ import annotations

import re
from collections import Counter

from bench.common.apiclient import ApiClient

_REFUSED = re.compile(r'kube-scheduler refused pod \S+ on node \S+: "(.*?)"')
_NUMBER = re.compile(r"\d+")


async def rollback_reasons(api: ApiClient, namespace: str) -> dict[str, int]:
    """Rollbacks by kind, from the namespace's events (each counted as often as the
    API server aggregated it)."""
    listed = await api.request(
        "GET", f"/api/v1/namespaces/{namespace}/events?fieldSelector=reason%3DRolledBack"
    )
    kinds: Counter[str] = Counter()
    for event in listed.get("items") or []:
        kinds[kind_of(str(event.get("message") or ""))] += int(event.get("count") or 1)
    return dict(kinds.most_common())


def kind_of(message: str) -> str:
    """The rule a `RolledBack` message names."""
    if "not bound within" in message:
        failed = "; a release failed" if "releasing pod" in message else ""
        return f"pods not bound within the release timeout{failed}"
    refused = _REFUSED.search(message)
    if refused:
        return "kube-scheduler refused: " + _NUMBER.sub("N", refused.group(1))
    if "the API server refused to release" in message:
        return "the API server refused a release"
    if "can no longer bind" in message:
        return "a planned node gone, cordoned or tainted"
    if "preempted for it still there" in message:
        return "victims still there"
    return _NUMBER.sub("N", message.removeprefix("rolled back: ").split(";")[0])[:80]
