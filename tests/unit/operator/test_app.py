"""A replica is ready once its webhooks listen with what they need (served resources
resolved, PriorityClasses and Workloads listed), and on the leader once its cache is
synced too."""

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
class Leader:
    synced: bool


def replica(*down: str, leader: Leader | None = None) -> Operator:
    operator = Operator(OperatorConfig())
    if "kopf" not in down:
        operator.kopf_ready.set()
    operator.served = Served("resolved" not in down)  # type: ignore[assignment]
    operator.webhooks = Part(listening="listening" not in down)  # type: ignore[assignment]
    operator.priority_informer = Part(synced_now="priorities" not in down)  # type: ignore[assignment]
    operator.workload_informer = Part(synced_now="workloads" not in down)  # type: ignore[assignment]
    operator.controller = leader  # type: ignore[assignment]
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
def test_the_leader_is_ready_once_its_cache_is_synced(synced: bool) -> None:
    assert replica(leader=Leader(synced)).ready() is synced
