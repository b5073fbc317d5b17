"""A PodGroup's workloadRef is checked against the cached Workload, and against the
API server's present answer before it is refused."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import kopf
import pytest

from muster.api.constants import API_VERSION
from muster.webhooks.workloads import UNAVAILABLE, WORKLOADS_MEMO, reference_problems

WORKLOAD = {
    "apiVersion": API_VERSION,
    "kind": "Workload",
    "metadata": {"namespace": "ml", "name": "train"},
    "spec": {
        "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
        "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}],
    },
}


def pod_group(template: str | None = "workers") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    if template is not None:
        spec["workloadRef"] = {"workloadName": "train", "templateName": template}
    return {"apiVersion": API_VERSION, "kind": "PodGroup", "spec": spec}


class Source:
    """Workloads in the cache and on the API server; counts live lookups."""

    def __init__(self, cached: Mapping[str, Any] | None, live: Mapping[str, Any] | None) -> None:
        self._cached = cached
        self._live = live
        self.live_lookups = 0

    async def cached(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._cached

    async def live(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        self.live_lookups += 1
        return self._live


def memo(source: Source | None) -> SimpleNamespace:
    return SimpleNamespace(**({WORKLOADS_MEMO: source} if source is not None else {}))


async def test_a_pod_group_without_a_reference_needs_no_workloads() -> None:
    assert await reference_problems(pod_group(None), "ml", memo(None)) == []


async def test_a_reference_the_cache_honours_costs_no_api_call() -> None:
    source = Source(WORKLOAD, None)
    assert await reference_problems(pod_group(), "ml", memo(source)) == []
    assert source.live_lookups == 0


async def test_a_cache_that_lags_is_confirmed_live_before_a_refusal() -> None:
    source = Source(None, WORKLOAD)
    assert await reference_problems(pod_group(), "ml", memo(source)) == []
    assert source.live_lookups == 1


async def test_a_reference_the_api_server_cannot_honour_is_refused() -> None:
    source = Source(None, None)
    problems = await reference_problems(pod_group(), "ml", memo(source))
    assert problems and source.live_lookups == 1
    wrong = await reference_problems(pod_group("nope"), "ml", memo(Source(WORKLOAD, WORKLOAD)))
    assert wrong


async def test_without_a_source_admission_fails_for_the_client_to_retry() -> None:
    with pytest.raises(kopf.AdmissionError) as failed:
        await reference_problems(pod_group(), "ml", memo(None))
    assert failed.value.code == UNAVAILABLE
