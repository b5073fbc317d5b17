"""Adoption refuses to start where an adopted scheduler binds pods."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from muster.api.adoption import VOLCANO, Adoption
from muster.client.kube import KubeError
from muster.operator.webhook_feeds.adopted_schedulers import (
    AdoptedSchedulerRunningError,
    adoption_to_start,
    binding_schedulers,
    refusal,
)

ADOPTION = Adoption(apis=(VOLCANO,), scheduler_names=("volcano", "scheduler-plugins-scheduler"))


def scheduled(**reporter: Any) -> dict[str, Any]:
    return {"reason": "Scheduled", **reporter}


def test_the_schedulers_that_bound_pods_are_those_that_reported_it() -> None:
    events = [
        scheduled(reportingComponent="default-scheduler"),
        scheduled(reportingComponent="", source={"component": "volcano"}),
        {"reason": "Pulled", "reportingComponent": "kubelet"},
    ]
    assert binding_schedulers(events) == {"default-scheduler", "volcano"}


def test_only_an_adopted_scheduler_that_runs_refuses_adoption() -> None:
    assert refusal(ADOPTION, {"default-scheduler", "my-scheduler"}) is None
    reason = refusal(ADOPTION, {"default-scheduler", "volcano"})
    assert reason is not None and "the scheduler volcano binds pods" in reason


class Kube:
    """Answers the list of Scheduled events and whether an API is served."""

    def __init__(self, events: list[dict[str, Any]], served: set[str]) -> None:
        self.events = events
        self.served = served

    async def list_all(self, path: str, **_: Any) -> tuple[list[dict[str, Any]], str]:
        assert path == "/api/v1/events"
        return self.events, "1"

    async def request(self, method: str, path: str, **_: Any) -> Any:
        if path in self.served:
            return {}
        raise KubeError(404, "NotFound", path)


def test_adoption_starts_with_the_served_apis_only_and_not_beside_their_scheduler() -> None:
    served = {f"/apis/{VOLCANO.api_version}"}
    started = asyncio.run(adoption_to_start(Kube([], served), ADOPTION))  # type: ignore[arg-type]
    assert started == ADOPTION
    assert asyncio.run(adoption_to_start(Kube([], set()), ADOPTION)) is None  # type: ignore[arg-type]
    assert asyncio.run(adoption_to_start(Kube([], served), None)) is None  # type: ignore[arg-type]
    running = Kube([scheduled(source={"component": "volcano"})], served)
    with pytest.raises(AdoptedSchedulerRunningError, match="volcano"):
        asyncio.run(adoption_to_start(running, ADOPTION))  # type: ignore[arg-type]
