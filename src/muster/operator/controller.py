"""The scheduling replica's work: informers into the cache, Job/Workload expansion, the
scheduling loop.

Every replica watches from its start; only the one that holds the Lease writes. The
informers list every resource they watch and keep the cache current on a standby too,
so a standby that takes the Lease decides at once, on the whole cluster as it is now,
including plans recorded by its predecessor (kube-scheduler likewise starts its
informers and waits for them to sync before it runs for leader:
cmd/kube-scheduler/app/server.go). Before it leads, nothing that writes runs: no
expansion, no event, no cycle. No cycle runs before all lists are in either.

`still_leading` is the elector's proof of leadership. The client given here refuses
every write without it (NotLeadingError), and everything that writes (the scheduling
loop, the expanders, events, pod actions) asks it before each batch, so that a
replica that lost the Lease stops at once instead of failing request by request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from muster.api.adoption import Adoption
from muster.api.features import ServedFeatures
from muster.api.wire import JsonObject
from muster.client import paths
from muster.client.discovery import served_features
from muster.client.informer import Informer, Sink, WatchCounters
from muster.client.kube import Kube
from muster.operator.config import OperatorConfig, engine_config
from muster.operator.execution.adoption import Adopter
from muster.operator.execution.estimates import EstimateWriter
from muster.operator.execution.events import QueuedEventRecorder
from muster.operator.execution.expansion import Expander
from muster.operator.execution.loop import LoopHooks, SchedulingLoop, Writers
from muster.operator.execution.selector_judge import SelectorJudge
from muster.operator.execution.trace import TraceFile
from muster.operator.execution.uncounted import UncountedPodActions
from muster.operator.execution.writer import StatusWriter
from muster.operator.intake.cache import LiveCache
from muster.operator.intake.pod_views import CAPACITY_QUERY, MEMBER_QUERY, PodViews
from muster.operator.intake.trigger import Trigger
from muster.operator.metrics import Metrics
from muster.scheduler import Case, Judgement, pod_count
from muster.webhooks.priority import PriorityClassLister

logger = logging.getLogger(__name__)


Source = tuple[str, Mapping[str, str], Sink]  # path, list/watch query, where it goes


def scheduling_sources(
    cache: LiveCache,
    views: PodViews | None = None,
    jobs: Sink | None = None,
    *,
    kueue: bool = False,
    devices: bool = False,
) -> list[Source]:
    """What the engine's snapshot is built from, and where each collection goes.

    Pods come through two views (`pod_views`): those that can take capacity and every
    gang member, merged by `views` (into the cache's pod sink unless given). Jobs go
    to `jobs` (the cache's Job sink unless given): every Job, since those opting in
    by the native field carry no label to select them by. Kueue's Topologies (the
    topology levels) where its API is served (`kueue`); the objects of Dynamic
    Resource Allocation where theirs is (`devices`).
    """
    views = views or PodViews(cache.pods)
    topologies: list[Source] = [(paths.KUEUE_TOPOLOGIES, {}, cache.topologies)] if kueue else []
    claimed: list[Source] = [
        (paths.RESOURCE_SLICES, {}, cache.resource_slices),
        (paths.DEVICE_CLASSES, {}, cache.device_classes),
        (paths.RESOURCE_CLAIMS, {}, cache.resource_claims),
        (paths.RESOURCE_CLAIM_TEMPLATES, {}, cache.resource_claim_templates),
    ]
    return [
        *topologies,
        (paths.JOBS, {}, jobs or cache.jobs),
        (paths.NODES, {}, cache.nodes),
        (paths.NAMESPACES, {}, cache.namespaces),
        (paths.VOLUMES, {}, cache.volumes),
        (paths.CLAIMS, {}, cache.claims),
        (paths.PRIORITY_CLASSES, {}, cache.priority_classes),
        (paths.BUDGETS, {}, cache.budgets),
        *(claimed if devices else []),
        (paths.POD_GROUPS, {}, cache.pod_group_sink),
        (paths.PODS, CAPACITY_QUERY, views.view()),
        (paths.PODS, MEMBER_QUERY, views.view()),
    ]


async def load_snapshot(kube: Kube) -> LiveCache:
    """A cache filled by one list of each scheduling source: the cluster, right now."""
    cache = LiveCache()
    served = await served_features(kube)
    sources = scheduling_sources(cache, kueue=served.kueue, devices=served.devices)
    for path, query, sink in sources:
        items, _ = await kube.list_all(path, query=query)
        for item in items:
            sink.upsert(item)
    return cache


class _Both:
    """One informer feeding two sinks; what scheduling cares about is the first's say."""

    def __init__(self, first: Sink, second: Sink) -> None:
        self.first = first
        self.second = second

    def upsert(self, obj: JsonObject) -> bool:
        self.second.upsert(obj)
        return self.first.upsert(obj)

    def remove(self, obj: JsonObject) -> bool:
        self.second.remove(obj)
        return self.first.remove(obj)


def informer_of(
    kube: Kube,
    source: Source,
    config: OperatorConfig,
    metrics: Metrics,
    *,
    on_change: Callable[[], None] = lambda: None,
) -> Informer:
    """The source's informer, with the operator's watch timeout and counters."""
    path, query, sink = source
    return Informer(
        kube,
        path,
        sink,
        query=query,
        on_change=on_change,
        watch_timeout=config.watch_timeout,
        counters=WatchCounters(
            expired=metrics.watch_expired.labels(path).inc,
            error=metrics.watch_errors.labels(path).inc,
        ),
    )


def adopting(sources: list[Source], adopter: Adopter) -> list[Source]:
    """The sources with the adopter fed too: the Muster PodGroups and the Namespaces it
    reads, and the PodGroups of each adopted API."""
    also: dict[str, Sink] = {paths.POD_GROUPS: adopter, paths.NAMESPACES: adopter.namespaces}
    fed: list[Source] = [
        (path, query, _Both(sink, also[path]) if path in also else sink)
        for path, query, sink in sources
    ]
    apis = adopter.adoption.apis
    return fed + [(api.collection, {}, adopter.foreign_sink(api)) for api in apis]


NOTHING_OPTIONAL_SERVED = ServedFeatures(devices=False, kueue=False)


class Controller:
    """Wires informers, the expander and the scheduling loop around one cache
    (`served`: whether Kueue's API is served, so its Topologies are watched, and
    whether Dynamic Resource Allocation's is, so its slices, classes and claims are;
    `adoption`: what is adopted, docs/frameworks.md; `priority_classes`: the
    replica's PriorityClasses, whose priority the expanders give the PodGroups they
    create)."""

    def __init__(
        self,
        kube: Kube,
        config: OperatorConfig,
        metrics: Metrics,
        *,
        priority_classes: PriorityClassLister,
        still_leading: Callable[[], bool] = lambda: True,
        served: ServedFeatures = NOTHING_OPTIONAL_SERVED,
        adoption: Adoption | None = None,
    ) -> None:
        engine = engine_config(config)
        self.trace = TraceFile(Path(config.record_trace), engine) if config.record_trace else None
        record = None if self.trace is None else self.trace.write
        self.cache = LiveCache(record=record)
        metrics.cached_pods.set_function(lambda: pod_count(self.cache.state))
        self.still_leading = still_leading
        self.trigger = Trigger(debounce=config.debounce, resync=config.resync_period)
        self.events = QueuedEventRecorder(
            kube, instance=config.identity, still_leading=still_leading
        )
        self.expanders = [
            Expander(
                kube,
                self.events,
                kind=kind,
                priority_classes=priority_classes,
                still_leading=still_leading,
            )
            for kind in ("Job", "Workload")
        ]
        views = PodViews(self.cache.pods)
        pods = self._pod_actions(kube, config, views, still_leading)
        jobs = _Both(self.cache.jobs, self.expanders[0])
        sources = scheduling_sources(
            self.cache, views, jobs, kueue=served.kueue, devices=served.devices
        )
        sources.append((paths.WORKLOADS, {}, self.expanders[1]))
        self.adopter = self._adopter(kube, adoption, priority_classes, still_leading)
        if self.adopter is not None:
            sources = adopting(sources, self.adopter)
        self.informers = [
            informer_of(kube, source, config, metrics, on_change=self.trigger.poke)
            for source in sources
        ]
        writer = StatusWriter(kube, self.cache)
        self.selectors = SelectorJudge(self._judged)
        self.estimates = EstimateWriter(
            cache=self.cache,
            writer=writer,
            events=self.events,
            config=config,
            engine_config=engine,
        )
        self.loop = SchedulingLoop(
            cache=self.cache,
            writers=Writers(writer, pods, self.events, self.estimates),
            trigger=self.trigger,
            metrics=metrics,
            engine_config=engine,
            selectors=self.selectors,
            hooks=LoopHooks(still_leading=still_leading, record=record),
        )

    def _judged(self, found: dict[Case, Judgement]) -> None:
        """Selector judgements into the state; a cycle then decides on them."""
        if self.cache.judge_selectors(found):
            self.trigger.poke()

    def _adopter(
        self,
        kube: Kube,
        adoption: Adoption | None,
        priority_classes: PriorityClassLister,
        still_leading: Callable[[], bool],
    ) -> Adopter | None:
        """The adopter of other schedulers' PodGroups, when any API is adopted; it is
        told the cluster's capacity only once every informer has listed."""
        if adoption is None:
            return None
        return Adopter(
            kube,
            self.events,
            adoption,
            priority_classes=priority_classes,
            still_leading=still_leading,
            capacity=lambda: self.cache.state.schedulable_allocatable() if self.synced else None,
        )

    def _pod_actions(
        self,
        kube: Kube,
        config: OperatorConfig,
        views: PodViews,
        still_leading: Callable[[], bool],
    ) -> UncountedPodActions:
        """Releases, evictions and deletions, whose answers reach the pod views."""
        pods = UncountedPodActions(
            kube, concurrency=config.release_concurrency, still_leading=still_leading
        )
        pods.answered = views.answer
        return pods

    @property
    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.informers)

    async def run(self, leading: asyncio.Event) -> None:
        """Watch until cancelled; write once `leading` is set, the loop once every
        informer has listed too."""
        try:
            async with asyncio.TaskGroup() as tasks:
                for informer in self.informers:
                    tasks.create_task(informer.run(), name=f"informer {informer.path}")
                await asyncio.gather(*(informer.synced.wait() for informer in self.informers))
                logger.info("cache synced: %d pod groups", len(self.cache.pod_groups))
                await leading.wait()
                tasks.create_task(self.events.run(), name="events")
                for expander in self.expanders:
                    tasks.create_task(expander.run(), name=f"{expander.kind} expander")
                if self.adopter is not None:
                    tasks.create_task(self.adopter.run(), name="adopter")
                tasks.create_task(self.loop.run(), name="scheduling loop")
                tasks.create_task(self.selectors.run(), name="selector judge")
                tasks.create_task(self.estimates.run(), name="start-time estimates")
        finally:
            if self.trace is not None:
                self.trace.close()
