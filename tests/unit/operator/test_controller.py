"""The leader's wiring: what the engine's snapshot is built from, one list of each for
a snapshot, and no cycle before every informer has listed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.api.wire import JsonObject
from muster.client.kube import Kube, KubeError
from muster.client.paths import (
    BUDGETS,
    CLAIMS,
    DEVICE_CLASSES,
    JOBS,
    NAMESPACES,
    NODES,
    POD_GROUPS,
    PODS,
    PRIORITY_CLASSES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    VOLUMES,
    WORKLOADS,
)
from muster.operator.config import OperatorConfig
from muster.operator.controller import Controller, load_snapshot, scheduling_sources
from muster.operator.intake.cache import LiveCache
from muster.operator.intake.pod_views import CAPACITY_QUERY, MEMBER_QUERY
from muster.operator.metrics import Metrics
from muster.scheduler.decisions.results import GroupKey, PodKey
from tests.unit.client.test_kube import ScriptedApiClient
from tests.unit.scheduler.builders import node, pod, pod_group

SCHEDULING_PATHS = [
    JOBS,
    NODES,
    NAMESPACES,
    VOLUMES,
    CLAIMS,
    PRIORITY_CLASSES,
    BUDGETS,
    RESOURCE_SLICES,
    DEVICE_CLASSES,
    RESOURCE_CLAIMS,
    RESOURCE_CLAIM_TEMPLATES,
    POD_GROUPS,
    PODS,
    PODS,
]


def test_every_collection_the_engine_reads_is_a_source_and_pods_come_in_two_views() -> None:
    sources = scheduling_sources(LiveCache())
    assert [path for path, _, _ in sources] == SCHEDULING_PATHS
    assert [query for path, query, _ in sources if path == PODS] == [CAPACITY_QUERY, MEMBER_QUERY]
    assert all(query == {} for path, query, _ in sources if path != PODS)


class ListingKube:
    """Answers each list with the objects of the collection it names."""

    def __init__(
        self, objects: Mapping[str, list[JsonObject]], unserved: frozenset[str] = frozenset()
    ) -> None:
        self.objects = objects
        self.unserved = unserved
        self.listed: list[tuple[str, Mapping[str, str] | None]] = []

    async def list_all(
        self, path: str, *, query: Mapping[str, str] | None = None
    ) -> tuple[list[JsonObject], str]:
        self.listed.append((path, query))
        if path in self.unserved:
            raise KubeError(404, "NotFound", "the server could not find the requested resource")
        return [dict(item) for item in self.objects.get(path, [])], "1"


async def test_a_snapshot_is_one_list_of_each_source_into_a_fresh_cache() -> None:
    kube = ListingKube(
        {
            NODES: [node("n1")],
            POD_GROUPS: [pod_group("train", min_count=1)],
            PODS: [pod("train-0", group="train"), pod("web", node_name="n1")],
        }
    )
    cache = await load_snapshot(kube)  # type: ignore[arg-type]
    assert [path for path, _ in kube.listed] == SCHEDULING_PATHS
    assert set(cache.state.groups) == {GroupKey("default", "train")}
    assert set(cache.state.pods) == {PodKey("default", "train-0"), PodKey("default", "web")}
    assert cache.state.node_slot("n1") is not None


async def test_a_snapshot_of_a_server_without_dynamic_resource_allocation_lists_the_rest() -> None:
    unserved = frozenset({RESOURCE_SLICES, DEVICE_CLASSES, RESOURCE_CLAIMS})
    kube = ListingKube({NODES: [node("n1")]}, unserved | {RESOURCE_CLAIM_TEMPLATES})
    cache = await load_snapshot(kube)  # type: ignore[arg-type]
    assert [path for path, _ in kube.listed] == SCHEDULING_PATHS
    assert cache.state.node_slot("n1") is not None


def controller(**config: Any) -> Controller:
    kube = Kube(ScriptedApiClient())  # type: ignore[arg-type]
    return Controller(kube, OperatorConfig(**config), Metrics())


def test_the_leader_watches_every_source_and_workloads_too() -> None:
    leader = controller()
    assert [informer.path for informer in leader.informers] == [*SCHEDULING_PATHS, WORKLOADS]
    assert [expander.kind for expander in leader.expanders] == ["Job", "Workload"]
    assert leader.trace is None
    optional = [informer.path for informer in leader.informers if informer.optional]
    assert optional == [RESOURCE_SLICES, DEVICE_CLASSES, RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES]


def test_it_is_synced_only_once_every_informer_has_listed() -> None:
    leader = controller()
    *first, last = leader.informers
    for informer in first:
        informer.synced.set()
    assert not leader.synced
    last.synced.set()
    assert leader.synced
