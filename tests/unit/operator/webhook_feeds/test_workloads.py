"""Workloads kept for admission by namespace and name, and looked up live when asked."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.constants import API_VERSION
from muster.api.references import referable_part
from muster.api.wire import JsonObject
from muster.client.kube import KubeError
from muster.operator.webhook_feeds.workloads import WorkloadStore

WORKLOAD = {
    "apiVersion": API_VERSION,
    "kind": "Workload",
    "metadata": {"namespace": "ml", "name": "train", "resourceVersion": "7"},
    "spec": {"podGroupTemplates": [{"name": "workers"}]},
}


class Kube:
    def __init__(self, answer: JsonObject | Exception) -> None:
        self.answer = answer
        self.asked: list[tuple[str, str]] = []

    async def request(self, method: str, path: str, **_: Any) -> JsonObject:
        self.asked.append((method, path))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def store(answer: JsonObject | Exception = WORKLOAD) -> WorkloadStore:
    return WorkloadStore(Kube(answer))  # type: ignore[arg-type]


async def test_the_cache_keeps_what_admission_refers_to_until_removed() -> None:
    workloads = store()
    assert workloads.upsert(WORKLOAD) is False
    assert await workloads.cached("ml", "train") == referable_part(WORKLOAD)
    assert await workloads.cached("other", "train") is None
    assert workloads.remove(WORKLOAD) is False
    assert await workloads.cached("ml", "train") is None


async def test_a_live_lookup_asks_the_api_server() -> None:
    workloads = store()
    assert await workloads.live("ml", "train") == WORKLOAD
    assert workloads.kube.asked == [  # type: ignore[attr-defined]
        ("GET", f"/apis/{API_VERSION}/namespaces/ml/workloads/train")
    ]


async def test_a_live_lookup_of_a_missing_workload_is_none_and_other_failures_raise() -> None:
    assert await store(KubeError(404, "NotFound", "not found")).live("ml", "x") is None
    with pytest.raises(KubeError):
        await store(KubeError(500, "InternalError", "etcd is down")).live("ml", "x")
