from __future__ import annotations

import json

from bench.audit import client_name, count_requests


def event(audit_id: str, agent: str, received: str, stage: str = "ResponseComplete") -> str:
    return json.dumps(
        {
            "auditID": audit_id,
            "stage": stage,
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
    assert counts == {"kube-scheduler": 2}
