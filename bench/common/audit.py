"""API requests per client, counted from the API server's audit log.

`hack/cluster.py up --audit` logs every request at Metadata level as JSON lines. A
client is named by the first word of its user agent (``kube-scheduler``,
``kube-controller-manager``, ``kwok``, ...); a request is counted once (a watch has
two events, one when its response starts and one when it ends) and only when the API
server received it inside the measured window.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from muster.api.times import parse_rfc3339


class Call(NamedTuple):
    """A kind of request: who sent it, and which verb on which resource."""

    client: str
    verb: str
    resource: str


def client_name(user_agent: str) -> str:
    """``kube-scheduler/v1.37.2 (linux/amd64) kubernetes/...`` -> ``kube-scheduler``."""
    return user_agent.split("/", 1)[0].split(" ", 1)[0] or "unknown"


def count_requests(
    lines: Iterable[str], *, start: float, end: float, seen: set[str] | None = None
) -> Counter[Call]:
    """Requests received in [start, end] (Unix seconds), per client, verb and resource
    (`seen`: the audit ids already counted, when one request can be in several files)."""
    seen = set() if seen is None else seen
    counts: Counter[Call] = Counter()
    for line in lines:
        if not line.strip():
            continue
        event = json.loads(line)
        audit_id = event["auditID"]
        if audit_id in seen:
            continue
        received = parse_rfc3339(event["requestReceivedTimestamp"])
        if not start <= received <= end:
            continue
        seen.add(audit_id)
        target = event.get("objectRef") or {}
        resource = "/".join(
            part for part in (target.get("resource"), target.get("subresource")) if part
        )
        call = Call(client_name(event.get("userAgent", "")), event["verb"], resource or "-")
        counts[call] += 1
    return counts


def count_requests_in_log(path: Path, *, start: float, end: float) -> Counter[Call]:
    """Requests in the audit log at `path` and in the files it was rotated into.

    The API server rotates its audit log at 100 MB (the default of
    `--audit-log-maxsize`) into `audit-<time>.log` beside it, which a burst of 50,000
    pods or a long run passes; counting only the current file loses most requests.
    """
    rotated = sorted(path.parent.glob(f"{path.stem}-*{path.suffix}"))
    files = [*rotated, path]
    counts: Counter[Call] = Counter()
    seen: set[str] = set()
    for file in files:
        with file.open() as lines:
            counts += count_requests(lines, start=start, end=end, seen=seen)
    return counts


def per_client(counts: Counter[Call]) -> Counter[str]:
    totals: Counter[str] = Counter()
    for call, count in counts.items():
        totals[call.client] += count
    return totals


def per_call(counts: Counter[Call], clients: Iterable[str]) -> dict[str, int]:
    """``{"patch pods": n, "create events": m, ...}`` for the given clients, most first."""
    wanted = set(clients)
    totals: Counter[str] = Counter()
    for call, count in counts.items():
        if call.client in wanted:
            totals[f"{call.verb} {call.resource}"] += count
    return dict(totals.most_common())
