"""etcd's JSON gateway, for what fault tests ask of etcd directly."""

from __future__ import annotations

import argparse
import json
import urllib.request

from devtools.cluster import layout
from devtools.cluster.layout import log


def etcd_url() -> str:
    command = json.loads((layout.STATE / "commands" / "etcd.json").read_text())
    flag = next(arg for arg in command if arg.startswith("--advertise-client-urls="))
    return str(flag.partition("=")[2])


def etcd_call(path: str, body: dict[str, object]) -> dict[str, object]:
    """One call to etcd's JSON gateway (etcd speaks gRPC; this is its HTTP face)."""
    request = urllib.request.Request(
        etcd_url() + path, data=json.dumps(body).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer: dict[str, object] = json.loads(response.read())
        return answer


def compact(_: argparse.Namespace) -> None:
    """Drop etcd's history up to its current revision, as its periodic compaction does.

    A watch that resumes from a revision before it then gets 410 Gone from an API
    server that serves watches from etcd (`--no-watch-cache`).
    """
    header = etcd_call("/v3/maintenance/status", {})["header"]
    assert isinstance(header, dict)
    revision = int(header["revision"])
    etcd_call("/v3/kv/compaction", {"revision": revision, "physical": True})
    log(f"compacted etcd at revision {revision}")
