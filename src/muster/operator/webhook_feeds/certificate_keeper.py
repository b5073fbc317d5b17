"""Every replica's part in the webhooks' certificate: share it, renew it, serve it, trust it.

The certificate lives in one Secret, so all replicas serve the same one. The chart
creates that Secret empty, so that the operator needs no right to create Secrets; a
Secret without a readable certificate is one due for renewal. Run without the chart,
whichever replica finds the Secret missing creates it (a losing racer reads the
winner's). Whichever finds it due renews it, with the Secret's resourceVersion so two replicas
never both renew. Each replica then makes sure the webhook configurations trust the
Secret's CA bundle *before* it serves a new certificate itself, and swaps the files
kopf's webhook server reads (kopf reloads them when they change).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import logging
import os
import shutil
import tempfile
from pathlib import Path

from muster.api.keys import resource_version
from muster.api.wire import JsonObject
from muster.client.kube import STRATEGIC_MERGE_PATCH, Kube, KubeError
from muster.client.objects import get_or_none
from muster.client.paths import SECRETS, namespaced
from muster.client.retry import ExponentialBackoff
from muster.operator.config import OperatorConfig, parse_service
from muster.webhooks.certificates import (
    ServingCertificate,
    from_secret,
    issue,
    secret_data,
    service_hosts,
)
from muster.webhooks.server import ServiceReference

logger = logging.getLogger(__name__)

# Three GETs a minute per replica; renewal itself is due weeks ahead.
CHECK_PERIOD = 60.0
RETRY_PERIOD = 10.0
WEBHOOK_CONFIGURATIONS = (
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
)


def service_reference(config: OperatorConfig) -> ServiceReference | None:
    """The Service --webhook-service names, for the webhook configurations' clientConfig."""
    if not config.webhook_service:
        return None
    namespace, name = parse_service(config.webhook_service)
    return ServiceReference(namespace=namespace, name=name)


def certificate_hosts(service_namespace: str, service: str, webhook_host: str) -> list[str]:
    """The Service's names, and the advertised address when it is a reachable one.

    In a cluster the webhooks listen on every interface (0.0.0.0) and are reached
    through the Service; run outside, they are reached at the address they listen on.
    """
    hosts = service_hosts(service, service_namespace)
    try:
        unspecified = ipaddress.ip_address(webhook_host).is_unspecified
    except ValueError:
        unspecified = not webhook_host
    if not unspecified:
        hosts.append(webhook_host)
    return hosts


def ca_bundle_patch(configuration: JsonObject, ca_bundle: str) -> JsonObject | None:
    """A strategic-merge patch (webhooks merge by name) setting every caBundle; None if set."""
    stale = [
        webhook["name"]
        for webhook in configuration.get("webhooks") or []
        if (webhook.get("clientConfig") or {}).get("caBundle") != ca_bundle
    ]
    if not stale:
        return None
    return {"webhooks": [{"name": name, "clientConfig": {"caBundle": ca_bundle}} for name in stale]}


def keeper_for(kube: Kube, config: OperatorConfig) -> CertificateKeeper | None:
    """The keeper --webhook-secret asks for, or None when the certificate comes from elsewhere."""
    if not config.webhook_secret:
        return None
    namespace, service = parse_service(config.webhook_service)
    return CertificateKeeper(
        kube,
        namespace=namespace,
        secret=config.webhook_secret,
        hosts=certificate_hosts(namespace, service, config.webhook_host),
        configuration=config.webhook_configuration,
        directory=Path(tempfile.mkdtemp(prefix="muster-webhooks-")),
    )


class CertificateKeeper:
    """Keeps one replica's served certificate and the configurations' trust current."""

    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str,
        secret: str,
        hosts: list[str],
        configuration: str,
        directory: Path,
    ) -> None:
        self.kube = kube
        self.secret_path = namespaced(SECRETS, namespace)
        self.namespace = namespace
        self.secret = secret
        self.hosts = hosts
        self.configuration = configuration
        self.directory = directory
        self.serving: ServingCertificate | None = None

    @property
    def cert_path(self) -> Path:
        return self.directory / "current" / "tls.crt"

    @property
    def key_path(self) -> Path:
        return self.directory / "current" / "tls.key"

    @property
    def ca_bundle(self) -> bytes:
        return b"" if self.serving is None else self.serving.ca_bundle

    async def refresh(self) -> None:
        """Bring the Secret, the configurations' trust and the served files up to date.

        The trust is checked every time, not only on a new certificate, so that
        configurations applied again (without a caBundle) are mended within a period.
        """
        current = await self._current(datetime.datetime.now(datetime.UTC))
        await self._trust(current.ca_bundle)
        if current != self.serving:
            self._install(current)
            logger.info("serving the webhook certificate valid until %s", current.not_after)

    async def until_refreshed(self) -> None:
        """The first refresh, tried until it succeeds (kopf needs the files before it
        serves, and the replica is not ready meanwhile). A refusal is not final here: a
        kube-apiserver that has just started refuses for a moment what RBAC allows, as
        its authorizer has not read the roles yet; so do its 5xx answers."""
        backoff = ExponentialBackoff(initial=0.5, maximum=RETRY_PERIOD)
        while not await self._refreshed():
            await asyncio.sleep(backoff.next())

    async def run(self) -> None:
        """Refresh every CHECK_PERIOD (sooner after a failure), until cancelled."""
        while True:
            await asyncio.sleep(CHECK_PERIOD if await self._refreshed() else RETRY_PERIOD)

    async def _refreshed(self) -> bool:
        try:
            await self.refresh()
        except (KubeError, OSError, TimeoutError) as error:
            logger.warning("could not refresh the webhook certificate: %s", error)
            return False
        return True

    async def _current(self, now: datetime.datetime) -> ServingCertificate:
        """The Secret's certificate, created or renewed first when needed."""
        while True:
            try:
                secret = await self.kube.request("GET", f"{self.secret_path}/{self.secret}")
            except KubeError as error:
                if not error.not_found:
                    raise
                created = issue(self.hosts, now=now)
                if await self._write(None, created):
                    logger.info("created the webhook certificate in Secret %s", self.secret)
                    return created
                continue
            stored = from_secret(secret)
            if stored is not None and not stored.needs_renewal(hosts=self.hosts, now=now):
                return stored
            renewed = issue(self.hosts, now=now, previous=stored)
            if await self._write(secret, renewed):
                logger.info("renewed the webhook certificate in Secret %s", self.secret)
                return renewed

    async def _write(self, existing: JsonObject | None, certificate: ServingCertificate) -> bool:
        """Create or replace the Secret; False when another replica wrote it first.

        A replaced Secret keeps its type, labels and annotations: the chart creates it
        (empty, and Opaque), and its installer's marks stay on it."""
        body: JsonObject = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {
                "name": self.secret,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/managed-by": "muster"},
            },
            "data": secret_data(certificate),
        }
        try:
            if existing is None:
                await self.kube.request("POST", self.secret_path, body=body)
            else:
                kept = existing.get("metadata") or {}
                for field in ("labels", "annotations"):
                    if field in kept:
                        body["metadata"][field] = kept[field]
                body["metadata"]["resourceVersion"] = resource_version(existing)
                body["type"] = existing.get("type", body["type"])
                await self.kube.request("PUT", f"{self.secret_path}/{self.secret}", body=body)
        except KubeError as error:
            if error.conflict:
                return False
            raise
        return True

    async def _trust(self, ca_bundle: bytes) -> None:
        """Patch the bundle into both configurations; ones not created yet are skipped."""
        encoded = base64.b64encode(ca_bundle).decode("ascii")
        for collection in WEBHOOK_CONFIGURATIONS:
            path = f"{collection}/{self.configuration}"
            configuration = await get_or_none(self.kube, path)
            patch = None if configuration is None else ca_bundle_patch(configuration, encoded)
            if patch is not None:
                await self.kube.request(
                    "PATCH", path, body=patch, content_type=STRATEGIC_MERGE_PATCH
                )

    def _install(self, certificate: ServingCertificate) -> None:
        """Swap the served files at once: a new directory, then one rename of a symlink.

        kopf reads the certificate and the key by path; both paths go through the
        `current` link, so it never sees a new certificate with an old key.
        """
        generation = Path(tempfile.mkdtemp(prefix="generation-", dir=self.directory))
        (generation / "tls.crt").write_bytes(certificate.certificate)
        key = generation / "tls.key"
        key.touch(mode=0o600)
        key.write_bytes(certificate.key)
        link = self.directory / "current.new"
        link.unlink(missing_ok=True)
        link.symlink_to(generation.name)
        os.replace(link, self.directory / "current")
        for old in self.directory.glob("generation-*"):
            if old != generation:
                shutil.rmtree(old, ignore_errors=True)
        self.serving = certificate
