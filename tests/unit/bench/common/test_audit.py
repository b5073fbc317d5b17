from __future__ import annotations

import json
from pathlib import Path

from bench.common.audit import (
    Call,
    client_name,
    count_requests,
    count_requests_in_log,
    per_call,
    per_client,
)


def event(
    audit_id: str,
    agent: str,
    received: str,
    stage: str = "ResponseComplete",
    target: tuple[str, str] = ("pods", "binding"),
) -> str:
    return json.dumps(
        {
            "auditID": audit_id,
            "stage": stage,
            "verb": "create",
            "objectRef": {"resource": target[0], "subresource": target[1]},
            "userAgent": agent,
            "requestReceivedTimestamp": received,
        }
    )


def test_client_is_the_first_word_of_the_user_agent() -> None:
    agent = "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/$Format/job-controller"
    assert client_name(agent) == "kube-controller-manager"
    assert client_name("muster-bench") == "muster-bench"
    assert client_name("") == "unknown"


def test_requests_count_once_and_only_inside_the_window() -> None:
    lines = [
        event("1", "kube-scheduler/v1", "2026-01-01T00:00:10.000000Z", "ResponseStarted"),
        event("1", "kube-scheduler/v1", "2026-01-01T00:00:10.000000Z"),
        event("2", "kube-scheduler/v1", "2026-01-01T00:00:11.000000Z"),
        event("3", "kwok/v0.8.0", "2026-01-01T00:00:09.000000Z"),
        "",
    ]
    start = 1767225610.0  # 2026-01-01T00:00:10Z
    counts = count_requests(lines, start=start, end=start + 5)
    assert counts == {Call("kube-scheduler", "create", "pods/binding"): 2}


def test_requests_add_up_per_client_and_per_call() -> None:
    lines = [
        event("1", "OpenAPI-Generator/31/python", "2026-01-01T00:00:10Z", target=("events", "")),
        event("2", "kopf/1.37", "2026-01-01T00:00:10Z", target=("events", "")),
        event("3", "kopf/1.37", "2026-01-01T00:00:10Z", target=("pods", "")),
        event("4", "kwok/v0.8.0", "2026-01-01T00:00:10Z", target=("pods", "status")),
    ]
    counts = count_requests(lines, start=0, end=2e9)
    assert per_client(counts) == {"OpenAPI-Generator": 1, "kopf": 2, "kwok": 1}
    assert per_call(counts, ["kopf", "OpenAPI-Generator"]) == {
        "create events": 2,
        "create pods": 1,
    }


def test_rotated_audit_files_are_counted_too(tmp_path: Path) -> None:
    at = "2026-01-01T00:00:10Z"
    rotated = tmp_path / "audit-2026-01-01T00-00-11.000.log"
    rotated.write_text(
        event("1", "kwok/v1", at, "ResponseStarted") + "\n" + event("2", "kwok/v1", at)
    )
    current = tmp_path / "audit.log"
    current.write_text(event("1", "kwok/v1", at) + "\n" + event("3", "kwok/v1", at) + "\n")
    counts = count_requests_in_log(current, start=0, end=2e9)
    assert counts == {Call("kwok", "create", "pods/binding"): 3}
