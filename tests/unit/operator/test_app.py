"""A replica is ready once its webhooks listen with what they need (served resources
resolved, PriorityClasses and Workloads listed) and its scheduling cache is synced, on
a standby too: it is ready to lead."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from muster.operator.app import Operator
from muster.operator.config import OperatorConfig

PARTS = ("kopf", "resolved", "listening", "priorities", "workloads")


@dataclass
class Served:
    done: bool

    def resolved(self) -> bool:
        return self.done


@dataclass
class Part:
    """Stands for a webhook server or an informer: what `ready` reads of it."""

    listening: bool = True
    synced_now: bool = True
    synced: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        if self.synced_now:
            self.synced.set()


@dataclass
class Scheduling:
    synced: bool


SYNCED = Scheduling(synced=True)


def replica(*down: str, scheduling: Scheduling | None = SYNCED) -> Operator:
    operator = Operator(OperatorConfig())
    if "kopf" not in down:
        operator.kopf_ready.set()
    operator.served = Served("resolved" not in down)  # type: ignore[assignment]
    operator.webhooks = Part(listening="listening" not in down)  # type: ignore[assignment]
    operator.priority_informer = Part(synced_now="priorities" not in down)  # type: ignore[assignment]
    operator.workload_informer = Part(synced_now="workloads" not in down)  # type: ignore[assignment]
    operator.controller = scheduling  # type: ignore[assignment]
    return operator


def test_a_replica_with_every_part_up_is_ready() -> None:
    assert replica().ready()


@pytest.mark.parametrize("down", PARTS)
def test_a_replica_with_any_part_down_is_not(down: str) -> None:
    assert not replica(down).ready()


def test_a_replica_that_has_not_started_its_webhooks_is_not_ready() -> None:
    operator = replica()
    operator.webhooks = None
    assert not operator.ready()


@pytest.mark.parametrize("synced", [True, False])
def test_a_replica_is_ready_once_its_scheduling_cache_is_synced(synced: bool) -> None:
    assert replica(scheduling=Scheduling(synced)).ready() is synced


def test_a_replica_whose_controller_has_not_started_is_not_ready() -> None:
    assert not replica(scheduling=None).ready()
