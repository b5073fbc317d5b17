"""The rollback kinds the benchmark reports, from the operator's messages."""

from __future__ import annotations

import pytest
from bench.e2e.rollbacks import kind_of


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        (
            "rolled back: 2 pod(s) not bound within 60s of release: g-0, g-1; in backoff "
            "until 2026-12-02T01:00:00Z (rollback 1 in a row)",
            "pods not bound within the release timeout",
        ),
        (
            "rolled back: 1 pod(s) not bound within 60s of release: g-1; releasing pod g-1 "
            'failed: "etcdserver: request timed out"; in backoff until x',
            "pods not bound within the release timeout; a release failed",
        ),
        (
            'rolled back: kube-scheduler refused pod g-3 on node n-17: "0/5000 nodes are '
            "available: 1 Insufficient nvidia.com/gpu, 4999 node(s) didn't match Pod's node "
            'affinity/selector." (and 2 more pod(s)); in backoff until x',
            "kube-scheduler refused: N/N nodes are available: N Insufficient nvidia.com/gpu, "
            "N node(s) didn't match Pod's node affinity/selector.",
        ),
        (
            'rolled back: the API server refused to release pod g-2: "denied"; in backoff',
            "the API server refused a release",
        ),
        (
            "rolled back: 1 planned pod(s) can no longer bind: their node is gone or "
            "cordoned: g-0 (node n-1); in backoff",
            "a planned node gone, cordoned or tainted",
        ),
        ("rolled back: something new 12; in backoff", "something new N"),
    ],
)
def test_each_rule_is_one_kind_without_names(message: str, kind: str) -> None:
    assert kind_of(message) == kind
