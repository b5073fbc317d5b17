"""The leader's wiring: what the engine's snapshot is built from, one list of each for
a snapshot, and no cycle before every informer has listed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.api.adoption import SCHEDULER_PLUGINS, VOLCANO, Adoption
from muster.api.features import ServedFeatures
from muster.api.keys import GroupKey, PodKey
from muster.api.wire import JsonObject
from muster.client.kube import Kube, KubeError
from muster.client.paths import (
    BUDGETS,
    CLAIMS,
    DEVICE_CLASSES,
    JOBS,
    KUEUE_API,
    KUEUE_TOPOLOGIES,
    NAMESPACES,
    NODES,
    POD_GROUPS,
    PODS,
    PRIORITY_CLASSES,
    RESOURCE_API,
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
from tests.unit.client.test_kube import ScriptedApiClient
from tests.unit.scheduler.builders import node, pod, pod_group
from tests.unit.scheduler.device_builders import resource_slice

SCHEDULING_PATHS = [
    JOBS,
    NODES,
    NAMESPACES,
    VOLUMES,
    CLAIMS,
    PRIORITY_CLASSES,
    BUDGETS,
    POD_GROUPS,
    PODS,
    PODS,
]
DEVICE_PATHS = [RESOURCE_SLICES, DEVICE_CLASSES, RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES]


def test_every_collection_the_engine_reads_is_a_source_and_pods_come_in_two_views() -> None:
    sources = scheduling_sources(LiveCache())
    assert [path for path, _, _ in sources] == SCHEDULING_PATHS
    assert [query for path, query, _ in sources if path == PODS] == [CAPACITY_QUERY, MEMBER_QUERY]
    assert all(query == {} for path, query, _ in sources if path != PODS)


class ListingKube:
    """Answers each list with the objects of the collection it names, and serves
    Kueue's API and Dynamic Resource Allocation's only when told to."""

    def __init__(
        self,
        objects: Mapping[str, list[JsonObject]],
        *,
        kueue: bool = False,
        devices: bool = False,
    ) -> None:
        self.objects = objects
        self.served = {KUEUE_API: kueue, RESOURCE_API: devices}
        self.listed: list[tuple[str, Mapping[str, str] | None]] = []

    async def request(self, method: str, path: str, **_: Any) -> JsonObject:
        assert method == "GET" and path in {*self.served, "/version"}
        if path == "/version":
            return {"gitVersion": "v1.37.2"}
        if self.served[path]:
            return {"kind": "APIResourceList"}
        raise KubeError(404, "NotFound", "the server could not find the requested resource")

    async def list_all(
        self, path: str, *, query: Mapping[str, str] | None = None
    ) -> tuple[list[JsonObject], str]:
        self.listed.append((path, query))
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


async def test_a_snapshot_takes_the_kueue_topologies_where_kueue_is_served() -> None:
    topology = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "gpus"},
        "spec": {"levels": [{"nodeLabel": "example.com/block"}, {"nodeLabel": "example.com/rack"}]},
    }
    kube = ListingKube({KUEUE_TOPOLOGIES: [topology]}, kueue=True)
    cache = await load_snapshot(kube)  # type: ignore[arg-type]
    assert [path for path, _ in kube.listed] == [KUEUE_TOPOLOGIES, *SCHEDULING_PATHS]
    assert cache.state.topologies == {"gpus": ("example.com/block", "example.com/rack")}


async def test_a_snapshot_takes_the_devices_where_dynamic_resource_allocation_is_served() -> None:
    kube = ListingKube({RESOURCE_SLICES: [resource_slice("n1")]}, devices=True)
    cache = await load_snapshot(kube)  # type: ignore[arg-type]
    listed = [path for path, _ in kube.listed]
    assert listed == [*SCHEDULING_PATHS[:7], *DEVICE_PATHS, *SCHEDULING_PATHS[7:]]
    assert set(cache.state.devices.slices) == {"n1-gpu.example.com"}


def controller(
    *,
    kueue: bool = False,
    devices: bool = False,
    adoption: Adoption | None = None,
    **config: Any,
) -> Controller:
    kube = Kube(ScriptedApiClient())  # type: ignore[arg-type]
    return Controller(
        kube,
        OperatorConfig(**config),
        Metrics(),
        priority_classes=no_classes,
        served=ServedFeatures(kueue=kueue, devices=devices),
        adoption=adoption,
    )


async def no_classes() -> list[dict[str, Any]]:
    return []


def test_the_leader_watches_every_source_and_workloads_too() -> None:
    leader = controller()
    assert [informer.path for informer in leader.informers] == [*SCHEDULING_PATHS, WORKLOADS]
    assert [expander.kind for expander in leader.expanders] == ["Job", "Workload"]
    assert leader.trace is None
    with_kueue = controller(kueue=True)
    assert with_kueue.informers[0].path == KUEUE_TOPOLOGIES
    with_devices = [informer.path for informer in controller(devices=True).informers]
    assert with_devices[7:11] == DEVICE_PATHS


def test_an_adopting_leader_watches_the_adopted_apis_and_feeds_the_adopter() -> None:
    assert controller().adopter is None
    adoption = Adoption(apis=(SCHEDULER_PLUGINS, VOLCANO), scheduler_names=("volcano",))
    leader = controller(adoption=adoption)
    assert leader.adopter is not None
    assert [informer.path for informer in leader.informers][-2:] == [
        SCHEDULER_PLUGINS.collection,
        VOLCANO.collection,
    ]
    [namespaces] = [informer for informer in leader.informers if informer.path == NAMESPACES]
    namespaces.sink.upsert({"metadata": {"name": "ml", "labels": {"a": "b"}}})
    assert leader.adopter.namespace_labels == {"ml": {"a": "b"}}


def test_it_is_synced_only_once_every_informer_has_listed() -> None:
    leader = controller()
    *first, last = leader.informers
    for informer in first:
        informer.synced.set()
    assert not leader.synced
    last.synced.set()
    assert leader.synced
