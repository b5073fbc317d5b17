"""`muster run`: webhooks and probes on every replica, scheduling on the leader.

kopf runs the admission webhooks (and keeps their configurations) on every replica,
so admission never depends on which replica leads. The Lease decides who runs the
`Controller`; a leader that loses its Lease exits non-zero rather than keep
scheduling beside a new leader, and its restart comes back as a standby.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

import kopf

from muster.api.constants import GROUP
from muster.operator.certificate_keeper import CertificateKeeper, keeper_for, service_reference
from muster.operator.config import OperatorConfig
from muster.operator.controller import Controller
from muster.operator.health import build_app, serve
from muster.operator.informer import Informer
from muster.operator.kube import Kube, apply_object, connect
from muster.operator.leader import LeaderElector
from muster.operator.metrics import Metrics
from muster.operator.priority_classes import PATH as PRIORITY_CLASSES
from muster.operator.priority_classes import PriorityClassStore
from muster.webhooks import server
from muster.webhooks.memories import AdmissionMemories
from muster.webhooks.priority import PRIORITY_CLASSES_MEMO

logger = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_LOST_LEADERSHIP = 2
EXIT_FAILED = 1


class Operator:
    """One replica of the operator, from start to a clean stop."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.kopf_ready = asyncio.Event()
        self.kopf_stop = asyncio.Event()
        self.controller: Controller | None = None
        self.priority_classes = PriorityClassStore()
        self.priority_informer: Informer | None = None
        self.webhook_ca = b""
        self.certificates: CertificateKeeper | None = None

    def ready(self) -> bool:
        """Webhooks up with what they need; on the leader, the cache synced too."""
        if not self.kopf_ready.is_set():
            return False
        if self.priority_informer is None or not self.priority_informer.synced.is_set():
            return False
        return self.controller is None or self.controller.synced

    async def run(self) -> int:
        kube = await connect(self.config.kubeconfig)
        self.certificates = keeper_for(kube, self.config)
        if self.certificates is not None:
            await self.certificates.refresh()  # kopf needs the files before it serves
        health = await serve(
            build_app(self.metrics.registry, self.ready),
            self.config.health_host,
            self.config.health_port,
        )
        self.priority_informer = Informer(
            kube, PRIORITY_CLASSES, self.priority_classes, on_change=lambda: None
        )
        priority_task = asyncio.create_task(self.priority_informer.run(), name="priorities")
        kopf_task = asyncio.create_task(self._run_kopf(), name="kopf")
        elector = self._elector(kube)
        elector_task = asyncio.create_task(elector.run(), name="leader election")
        certificates_task = (
            None
            if self.certificates is None
            else asyncio.create_task(self.certificates.run(), name="webhook certificate")
        )
        controller_task: asyncio.Task[None] | None = None
        try:
            if self.config.manage_webhooks:
                await self._register_webhooks(kube, kopf_task)
            leading = asyncio.create_task(elector.leading.wait())
            await asyncio.wait({kopf_task, leading}, return_when=asyncio.FIRST_COMPLETED)
            leading.cancel()
            if kopf_task.done():
                return self._exit_code(kopf_task)
            self.metrics.leader.set(1)
            self.controller = Controller(kube, self.config, self.metrics)
            controller_task = asyncio.create_task(self.controller.run(), name="controller")
            lost = asyncio.create_task(elector.lost.wait())
            await asyncio.wait(
                {kopf_task, controller_task, lost}, return_when=asyncio.FIRST_COMPLETED
            )
            lost.cancel()
            if elector.lost.is_set():
                return EXIT_LOST_LEADERSHIP
            if controller_task.done():
                return self._exit_code(controller_task)
            return self._exit_code(kopf_task)
        finally:
            self.metrics.leader.set(0)
            for task in (controller_task, elector_task, priority_task, certificates_task):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
            await elector.release()
            self.kopf_stop.set()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await kopf_task
            await health.cleanup()
            await kube.close()

    async def _register_webhooks(self, kube: Kube, kopf_task: asyncio.Task[None]) -> None:
        """Once the webhooks answer, point the API server at them (create or replace)."""
        while not await self._webhooks_listening():
            if kopf_task.done():
                return
            await asyncio.sleep(0.1)
        configurations = server.webhook_configurations(
            server.webhook_handlers(kopf.get_default_registry()),
            name=self.config.webhook_configuration,
            url=f"https://{self.config.webhook_host}:{self.config.webhook_port}",
            ca_bundle=self.webhook_ca if self.certificates is None else self.certificates.ca_bundle,
            group=GROUP,
            service=service_reference(self.config),
        )
        for configuration in configurations:
            await apply_object(kube, configuration)
            logger.info(
                "registered the %s %s", configuration["kind"], self.config.webhook_configuration
            )

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
        elector = LeaderElector(
            kube,
            name=self.config.lease_name,
            namespace=self.config.lease_namespace,
            identity=self.config.identity,
            lease_duration=self.config.lease_duration,
            renew_period=self.config.lease_renew_period,
        )
        if not self.config.leader_election:
            elector.leading.set()
        return elector

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
        )
        settings.admission.server = webhooks
        self.webhook_ca = webhooks.cadata or b""
        registry = kopf.get_default_registry()
        kopf.on.login(registry=registry)(self._login)
        memo = kopf.Memo()
        setattr(memo, PRIORITY_CLASSES_MEMO, self.priority_classes.list)
        await kopf.operator(
            registry=registry,
            memo=memo,
            memories=AdmissionMemories(),
            settings=settings,
            clusterwide=True,
            standalone=True,
            ready_flag=self.kopf_ready,
            stop_flag=self.kopf_stop,
        )

    def _login(self, **kwargs: Any) -> kopf.ConnectionInfo | None:
        if self.config.kubeconfig:
            os.environ["KUBECONFIG"] = self.config.kubeconfig
            return kopf.login_with_kubeconfig(**kwargs)
        return kopf.login_with_service_account(**kwargs)

    @staticmethod
    def _exit_code(task: asyncio.Task[None]) -> int:
        if not task.done() or task.cancelled():
            return EXIT_OK  # stopped by a signal, which kopf handles for the whole process
        error = task.exception()
        if error is None:
            return EXIT_OK
        logger.error("stopped by an error", exc_info=error)
        return EXIT_FAILED
