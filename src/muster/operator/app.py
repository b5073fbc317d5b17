"""`muster run`: webhooks and probes on every replica, scheduling on the leader.

kopf runs the admission webhooks (and keeps their configurations) on every replica,
so admission never depends on which replica leads. Every replica runs the
`Controller`'s watches from its start, so a standby that takes the Lease decides at
once. The Lease decides which one writes, every write going through a client fenced
by the elector's `still_leading()`: the moment the leader cannot prove it still
leads, its writes stop (they fail with NotLeadingError before they are sent). A
leader that loses its Lease exits non-zero rather than keep running beside a new
leader, and its restart comes back as a standby; so does a replica whose elector
ends for any other reason, since without one it could never lead, nor know that it
does not.

SIGTERM and SIGINT are kopf's to catch, for the whole process: kopf stops its
webhooks, then runs its cleanup, which tells the Operator to stop. The leader then
stops its controller before its elector, which gives the Lease up on the way out, so
a standby leads at its next attempt. (Left to kopf, the controller would run on for
the 5 s kopf grants every task begun after it started, and only then be cancelled.)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

import kopf

from muster.api.adoption import Adoption
from muster.api.constants import GROUP
from muster.api.features import ServedFeatures
from muster.client import paths
from muster.client.connection import connect, in_cluster_server, own_user
from muster.client.discovery import served_features
from muster.client.informer import Informer
from muster.client.kube import Kube
from muster.client.objects import apply_object
from muster.client.throttle import RateLimiter
from muster.client.tls_buffers import limit_read_buffers
from muster.operator.config import OperatorConfig, adoption, topology_levels
from muster.operator.controller import Controller, informer_of
from muster.operator.dashboard.serving import ServedDashboard, serve_dashboard
from muster.operator.health import build_app, serve
from muster.operator.leader import LeaderElector, LeaseTiming
from muster.operator.metrics import Metrics
from muster.operator.webhook_feeds.adopted_schedulers import (
    AdoptedSchedulerRunningError,
    adoption_to_start,
)
from muster.operator.webhook_feeds.certificate_keeper import (
    CertificateKeeper,
    keeper_for,
    service_reference,
)
from muster.operator.webhook_feeds.node_labels import NodeLabelKeys
from muster.operator.webhook_feeds.priority_classes import PriorityClassStore
from muster.operator.webhook_feeds.topology_levels import TopologyLevels
from muster.operator.webhook_feeds.workloads import WorkloadStore
from muster.webhooks import server
from muster.webhooks.adoption import ADOPTION_MEMO
from muster.webhooks.advice import NODE_LABEL_KEYS_MEMO
from muster.webhooks.kopf_private import credentials, references
from muster.webhooks.memories import AdmissionMemories
from muster.webhooks.priority import PRIORITY_CLASSES_MEMO
from muster.webhooks.served_resources import ServedResources
from muster.webhooks.validation import FEATURES_MEMO, TOPOLOGY_LEVELS_MEMO
from muster.webhooks.workloads import WORKLOADS_MEMO

logger = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_LOST_LEADERSHIP = 2
EXIT_FAILED = 1
# Adoption was asked for where a scheduler it would stand in for runs (docs/frameworks.md).
EXIT_ADOPTION_REFUSED = 3
# How long each part of the operator may take to stop. A replica that lost the Lease
# must be gone (and back as a standby) soon, whatever it was waiting on.
SHUTDOWN_SECONDS = 5.0


async def _ended(task: asyncio.Task[object]) -> None:
    """Wait for a task that was told to stop, for SHUTDOWN_SECONDS, then cancel it."""
    _, pending = await asyncio.wait({task}, timeout=SHUTDOWN_SECONDS)
    if pending:
        running = sorted(
            other.get_name()
            for other in asyncio.all_tasks()
            if other is not asyncio.current_task() and not other.done()
        )
        logger.warning(
            "%s did not stop within %gs; cancelled (tasks still running: %s)",
            task.get_name(),
            SHUTDOWN_SECONDS,
            ", ".join(running),
        )
        task.cancel()
        await asyncio.wait({task}, timeout=SHUTDOWN_SECONDS)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: it was logged where it mattered


class Operator:
    """One replica of the operator, from start to a clean stop."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.kopf_ready = asyncio.Event()
        self.kopf_stop = asyncio.Event()
        self.stop_requested = asyncio.Event()  # by kopf's cleanup: a signal, or kopf_stop
        self.served = ServedResources(kopf.get_default_registry(), references.Insights())
        self.controller: Controller | None = None
        self.controller_task: asyncio.Task[None] | None = None
        self.priority_classes = PriorityClassStore()
        self.priority_informer: Informer | None = None
        self.topology_levels = TopologyLevels(topology_levels(config.topology_levels))
        self.topology_informer: Informer | None = None
        self.node_labels = NodeLabelKeys()
        self.node_informer: Informer | None = None
        # Which optional APIs are served: Kueue's (its Topologies then watched) and
        # Dynamic Resource Allocation's (its objects then; claims refused without it).
        self.features = ServedFeatures(devices=False, kueue=False)
        self.workloads: WorkloadStore | None = None
        self.workload_informer: Informer | None = None
        self.adoption: Adoption | None = None  # what this replica adopts, once started
        self.webhook_ca = b""
        self.certificates: CertificateKeeper | None = None
        self.webhooks: server.WebhookServer | None = None

    def ready(self) -> bool:
        """Webhooks up (their port listening) with what they need, and the scheduling
        cache synced (on a standby too: it is ready to lead)."""
        if not self.kopf_ready.is_set() or not self.served.resolved():
            return False
        if self.webhooks is None or not self.webhooks.listening:
            return False
        for informer in (self.priority_informer, self.workload_informer):
            if informer is None or not informer.synced.is_set():
                return False
        if self.topology_informer is not None and not self.topology_informer.synced.is_set():
            return False
        return self.controller is not None and self.controller.synced

    async def run(self) -> int:
        limit_read_buffers()
        kube = await connect(self.config.kubeconfig, user_agent=f"muster/{self.config.identity}")
        if not await self._start_adoption(kube):
            await kube.close()
            return EXIT_ADOPTION_REFUSED
        self.certificates = keeper_for(kube, self.config)
        if self.certificates is not None:
            await self.certificates.until_refreshed()
        health = await serve(
            build_app(self.metrics.registry, self.ready),
            self.config.health_host,
            self.config.health_port,
        )
        informer_tasks = await self._start_informers(kube)
        dashboard = await self._dashboard()
        kopf_task = asyncio.create_task(self._run_kopf(), name="kopf")
        stopping = asyncio.create_task(self.stop_requested.wait(), name="stop requested")
        # The Lease has a client of its own, unthrottled: a burst of releases must not
        # delay a renewal.
        elector = self._elector(kube.view())
        elector_task = (
            asyncio.create_task(elector.run(), name="leader election")
            if self.config.leader_election
            else None
        )
        certificates_task = (
            None
            if self.certificates is None
            else asyncio.create_task(self.certificates.run(), name="webhook certificate")
        )
        try:
            if self.config.manage_webhooks:
                await self._register_webhooks(kube, kopf_task)
            return await self._lead(kube, elector, elector_task, kopf_task, stopping)
        finally:
            self.metrics.leader.set(0)
            # The controller first: the elector gives the Lease up as it ends.
            for task in (
                self.controller_task,
                elector_task,
                *informer_tasks,
                certificates_task,
                stopping,
                dashboard.task if dashboard else None,
            ):
                if task is not None:
                    task.cancel()
                    await _ended(task)
            self.kopf_stop.set()
            await _ended(kopf_task)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(SHUTDOWN_SECONDS):
                    await health.cleanup()
                    if dashboard:
                        await dashboard.close()
                    await kube.close()
            logger.info("stopped")

    async def _start_adoption(self, kube: Kube) -> bool:
        """Decide what this replica adopts; False (logged) when adoption is refused."""
        try:
            self.adoption = await adoption_to_start(kube, adoption(self.config))
        except AdoptedSchedulerRunningError as refused:
            logger.error("%s", refused)
            return False
        return True

    async def _start_informers(self, kube: Kube) -> list[asyncio.Task[None]]:
        """The PriorityClasses, Workloads, node label keys and Kueue Topologies that
        every replica's webhooks read; first, which optional APIs the cluster serves
        (Kueue's, whose Topologies are then watched, and Dynamic Resource Allocation's),
        said in one line with what is off and why. Readiness does not wait for the node
        label keys: they only ever warn."""
        self.features = await served_features(kube)
        logger.info("%s", self.features.summary())
        self.priority_informer = informer_of(
            kube, (paths.PRIORITY_CLASSES, {}, self.priority_classes), self.config, self.metrics
        )
        priority_task = asyncio.create_task(self.priority_informer.run(), name="priorities")
        self.workloads = WorkloadStore(kube)
        self.workload_informer = Informer(
            kube, paths.WORKLOADS, self.workloads, on_change=lambda: None
        )
        workload_task = asyncio.create_task(self.workload_informer.run(), name="workloads")
        self.node_informer = informer_of(
            kube, (paths.NODES, {}, self.node_labels), self.config, self.metrics
        )
        node_task = asyncio.create_task(self.node_informer.run(), name="node labels")
        if not self.features.kueue:
            return [priority_task, workload_task, node_task]
        self.topology_informer = informer_of(
            kube, (paths.KUEUE_TOPOLOGIES, {}, self.topology_levels), self.config, self.metrics
        )
        topology_task = asyncio.create_task(self.topology_informer.run(), name="topologies")
        return [priority_task, workload_task, node_task, topology_task]

    async def _dashboard(self) -> ServedDashboard | None:
        """The read-only page, when `--dashboard-port` asks for it: a client, watches and
        a port of its own (on every replica, leader or not)."""
        if not self.config.dashboard_port:
            return None
        return await serve_dashboard(self.config, self.metrics)

    async def _lead(
        self,
        kube: Kube,
        elector: LeaderElector,
        elector_task: asyncio.Task[None] | None,
        kopf_task: asyncio.Task[None],
        stopping: asyncio.Task[Any],
    ) -> int:
        """Run the controller, watching at once and writing once this replica leads (a
        warm standby); the exit code of whatever ends first."""
        fenced = kube.view(
            limiter=RateLimiter(qps=self.config.kube_qps, burst=self.config.kube_burst),
            fence=elector.lease_left,
        )
        self.controller = Controller(
            fenced,
            self.config,
            self.metrics,
            priority_classes=self._synced_priority_classes,
            still_leading=elector.still_leading,
            served=self.features,
            adoption=self.adoption,
        )
        controller_task = asyncio.create_task(
            self.controller.run(elector.leading), name="controller"
        )
        self.controller_task = controller_task
        leading = asyncio.create_task(elector.leading.wait())
        watched = {kopf_task, stopping, leading, controller_task}
        watched |= {elector_task} if elector_task else set()
        await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        leading.cancel()
        if kopf_task.done() or stopping.done():
            return self._exit_code(kopf_task)
        if elector_task is not None and elector_task.done():
            return self._elector_ended(elector_task)
        if controller_task.done():
            return self._exit_code(controller_task)
        self.metrics.leader.set(1)
        watched = {kopf_task, stopping, controller_task}
        watched |= {elector_task} if elector_task else set()
        await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        if elector_task is not None and elector_task.done():
            return self._elector_ended(elector_task)
        if controller_task.done():
            return self._exit_code(controller_task)
        return self._exit_code(kopf_task)

    async def _register_webhooks(self, kube: Kube, kopf_task: asyncio.Task[None]) -> None:
        """Once the webhooks answer, point the API server at them (create or replace)."""
        while not await self._webhooks_listening():
            if kopf_task.done():
                return
            await asyncio.sleep(0.1)
        configurations = server.webhook_configurations(
            server.webhook_handlers(kopf.get_default_registry()),
            name=self.config.webhook_configuration,
            where=service_reference(self.config)
            or f"https://{self.config.webhook_host}:{self.config.webhook_port}",
            ca_bundle=self.webhook_ca if self.certificates is None else self.certificates.ca_bundle,
            group=GROUP,
            adoption=self.adoption,
            operator_user=await own_user(kube),
        )
        for configuration in configurations:
            await apply_object(kube, configuration)
            logger.info(
                "registered the %s %s", configuration["kind"], self.config.webhook_configuration
            )

    def _node_label_keys(self) -> frozenset[str] | None:
        """The label keys the nodes carry, once the replica's watch has listed them."""
        if self.node_informer is None or not self.node_informer.synced.is_set():
            return None
        return self.node_labels.carried

    async def _synced_priority_classes(self) -> Sequence[Mapping[str, Any]]:
        """Every PriorityClass, once the replica's watch has listed them all."""
        if self.priority_informer is not None:
            await self.priority_informer.synced.wait()
        return await self.priority_classes.list()

    async def _webhooks_listening(self) -> bool:
        if not self.kopf_ready.is_set():
            return False
        try:
            _, writer = await asyncio.open_connection(
                self.config.webhook_host, self.config.webhook_port
            )
        except OSError:
            return False
        writer.close()
        return True

    def _elector(self, kube: Kube) -> LeaderElector:
        """The Lease's elector; without leader election, one that always leads."""
        timing = LeaseTiming(
            lease_duration=self.config.lease_duration,
            renew_deadline=self.config.lease_renew_deadline,
            retry_period=self.config.lease_retry_period,
        )
        elector = LeaderElector(
            kube,
            name=self.config.lease_name,
            namespace=self.config.lease_namespace,
            identity=self.config.identity,
            timing=timing,
        )
        if not self.config.leader_election:
            elector.lead_unconditionally()
        return elector

    @staticmethod
    def _elector_ended(task: asyncio.Task[None]) -> int:
        if not task.cancelled() and task.exception() is not None:
            logger.error("leader election failed", exc_info=task.exception())
            return EXIT_FAILED
        return EXIT_LOST_LEADERSHIP

    async def _run_kopf(self) -> None:
        settings = kopf.OperatorSettings()
        settings.posting.enabled = False
        certfile, keyfile = self.config.webhook_cert, self.config.webhook_key
        if self.certificates is not None:
            certfile, keyfile = str(self.certificates.cert_path), str(self.certificates.key_path)
        webhooks = server.webhook_server(
            host=self.config.webhook_host,
            port=self.config.webhook_port,
            certfile=certfile,
            keyfile=keyfile,
            resources=self.served,
        )
        settings.admission.server = self.webhooks = webhooks
        self.webhook_ca = webhooks.cadata or b""
        registry = kopf.get_default_registry()
        kopf.on.login(registry=registry)(self._login)
        kopf.on.cleanup(registry=registry)(self._kopf_stopping)
        memo = kopf.Memo()
        setattr(memo, PRIORITY_CLASSES_MEMO, self.priority_classes.list)
        setattr(memo, WORKLOADS_MEMO, self.workloads)
        setattr(memo, ADOPTION_MEMO, self.adoption)
        setattr(memo, TOPOLOGY_LEVELS_MEMO, self.topology_levels.levels)
        setattr(memo, NODE_LABEL_KEYS_MEMO, self._node_label_keys)
        setattr(memo, FEATURES_MEMO, self.features)
        vault = credentials.Vault()
        rescans = asyncio.create_task(
            self.served.keep_resolved(
                settings, vault, on_rescan=self.metrics.webhook_resource_rescans.inc
            ),
            name="webhook resources",
        )
        try:
            await kopf.operator(
                registry=registry,
                memo=memo,
                memories=AdmissionMemories(),
                settings=settings,
                clusterwide=True,
                standalone=True,
                ready_flag=self.kopf_ready,
                stop_flag=self.kopf_stop,
                insights=self.served.insights,
                vault=vault,
            )
        finally:
            rescans.cancel()
            await _ended(rescans)

    async def _kopf_stopping(self, **_: Any) -> None:
        self.stop_requested.set()

    def _login(self, **kwargs: Any) -> kopf.ConnectionInfo | None:
        if self.config.kubeconfig:
            os.environ["KUBECONFIG"] = self.config.kubeconfig
            return kopf.login_with_kubeconfig(**kwargs)
        found = kopf.login_with_service_account(**kwargs)
        server = in_cluster_server(os.environ)
        if found is None or server is None:
            return found
        return dataclasses.replace(found, server=server)

    @staticmethod
    def _exit_code(task: asyncio.Task[None]) -> int:
        if not task.done() or task.cancelled():
            return EXIT_OK  # stopped by a signal, which kopf handles for the whole process
        error = task.exception()
        if error is None:
            return EXIT_OK
        logger.error("stopped by an error", exc_info=error)
        return EXIT_FAILED
