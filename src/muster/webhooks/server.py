"""Serving the admission webhooks: TLS certificate, kopf's server, their configurations.

The API server calls webhooks over HTTPS only. In a cluster the certificate comes
from a Secret (`--webhook-cert`, `--webhook-key`); elsewhere (a laptop, the e2e
tests) the operator issues one for the address it advertises (`certificates`) and
puts its CA, as the CA bundle, into the webhook configurations.

The configurations are built here from the registered kopf handlers, one webhook
per handler, each as narrow as its handler: its resource and operations, an object
selector from its label filter, and a CEL match condition from its field filter (for
Jobs that opt in through `spec.scheduling`, which no label marks). kopf's own
managed configurations cannot express match conditions, hence this builder.

The webhooks of Muster's own kinds (PodGroups, Workloads) leave the operator's own
writes alone, by a match condition on the request's user (:func:`sparing`), when
that user is a ServiceAccount (:func:`spared_user`): what the
operator creates or changes comes from a Job or Workload these webhooks admitted
already, and it resolves its PodGroups' priority itself
(:mod:`muster.operator.execution.expansion`). So a labelled Job costs one webhook
call, its gating, and nothing for the Workload and PodGroup made for it.

Importing this module registers every webhook handler of the package with kopf.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import json
import logging
import re
import tempfile
import urllib.parse
from collections.abc import AsyncGenerator, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import kopf

import muster.webhooks.adoption
import muster.webhooks.advice
import muster.webhooks.gating
import muster.webhooks.priority
import muster.webhooks.validation  # noqa: F401
from muster.api.adoption import Adoption
from muster.api.constants import GROUP
from muster.webhooks import serving
from muster.webhooks.adoption import ADOPT_PODS, ADOPT_PODS_CONDITION
from muster.webhooks.advice import WARN_DROPPED_FIELD, WARN_DROPPED_FIELD_CONDITION
from muster.webhooks.certificates import issue
from muster.webhooks.gating import GATE_PODS, GATE_PODS_CONDITION

# Imported for their registration of webhook handlers with kopf.
from muster.webhooks.kopf_private import (
    Request,
    Response,
    WebhookHandler,
    WebhookType,
    admission,
    registered_handlers,
)
from muster.webhooks.served_resources import ServedResources

logger = logging.getLogger(__name__)


class WebhookServer(kopf.WebhookServer):
    """kopf's HTTPS webhook server, served by :mod:`muster.webhooks.serving` instead:
    bounded, time-limited requests answered on a thread of their own.

    It also routes a handler's lowercased id to the handler: a Service's
    `clientConfig.service.path` must be lowercase, while kopf keeps the case of a
    field filter in the handler's id (`.../spec.scheduling.schedulingPolicy`) and
    routes by the exact id; so the in-cluster configurations call lowercased paths.
    Like kopf's, it restarts with the new files when its certificate is renewed.

    A call about a resource a handler serves but kopf has not resolved yet (see
    :mod:`muster.webhooks.served_resources`) is answered "not ready, call again",
    never 404, so the API server does not refuse the object for it.
    """

    def __init__(self, *, resources: ServedResources, **kopf_options: Any) -> None:
        super().__init__(**kopf_options)
        self.resources = resources
        # Whether the port takes connections: kopf says it is ready before its server
        # task has bound the port, and a replica must not be called before.
        self.listening = False

    async def __call__(self, fn: kopf.WebhookFn) -> AsyncGenerator[kopf.WebhookClientConfig, None]:
        ids = {
            str(handler.id).lower(): str(handler.id)
            for handler in webhook_handlers(kopf.get_default_registry())
        }

        async def routed(request: Request, *, webhook: str | None = None, **rest: Any) -> Response:
            if webhook is not None:
                webhook = ids.get(webhook, webhook)
            try:
                return await fn(request, webhook=webhook, **rest)
            except admission.UnknownResourceError as error:
                if self.resources.serves(request):
                    raise serving.NotReadyError(f"resource not discovered yet: {error}") from None
                raise

        while True:
            cadata, context = self._build_ssl()  # no context: plain HTTP (`insecure`)
            port = self.port or self._allocate_free_port()
            site = serving.ThreadedSite(
                serving.application(routed), host=self.addr or None, port=port, ssl=context
            )
            await site.start()
            self.listening = True
            try:
                scheme = "http" if context is None else "https"
                url = self._build_url(scheme, self.host or "localhost", port, "")
                client_config = kopf.WebhookClientConfig(url=url)
                if cadata is not None:
                    client_config["caBundle"] = base64.b64encode(cadata).decode("ascii")
                yield client_config
                await self._certificate_changed()
                logger.info("serving the webhooks with the renewed certificate")
            finally:
                self.listening = False
                await site.stop()

    async def _certificate_changed(self) -> None:
        """Returns once the certificate files differ from when it was called."""
        initial = self._certificate_digest()
        while self._certificate_digest() == initial:
            await asyncio.sleep(self.file_check_interval)

    def _certificate_digest(self) -> str:
        digest = hashlib.sha256()
        for path in (self.certfile, self.pkeyfile, self.cafile):
            if path is not None:
                digest.update(Path(path).read_bytes())
        return digest.hexdigest()


def webhook_server(
    *, host: str, port: int, certfile: str | None, keyfile: str | None, resources: ServedResources
) -> WebhookServer:
    """kopf's HTTPS webhook server, with the given certificate or a fresh one for `host`.

    Its `cadata` is the CA bundle to put into the webhook configurations.
    """
    if certfile is None or keyfile is None:
        directory = Path(tempfile.mkdtemp(prefix="muster-webhooks-"))
        served = issue([host], now=datetime.datetime.now(datetime.UTC))
        (directory / "tls.crt").write_bytes(served.chain)
        (directory / "tls.key").write_bytes(served.key)
        (directory / "tls.key").chmod(0o600)
        certfile, keyfile = str(directory / "tls.crt"), str(directory / "tls.key")
    return WebhookServer(
        resources=resources,
        addr=host,
        port=port,
        host=host,
        certfile=certfile,
        pkeyfile=keyfile,
        cadata=Path(certfile).read_bytes(),
    )


MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"
_NOT_IN_A_NAME = re.compile(r"[^a-z0-9.-]+")


def webhook_handlers(registry: kopf.OperatorRegistry) -> list[WebhookHandler]:
    """The admission handlers registered with kopf, in a stable order."""
    handlers = registered_handlers(registry)
    return sorted(handlers, key=lambda handler: str(handler.id))


def webhook_name(handler_id: str, group: str) -> str:
    """A webhook name the API server accepts: lowercase, dots and dashes, qualified."""
    slug = _NOT_IN_A_NAME.sub("-", handler_id.lower().replace("/", ".")).strip("-.")
    return f"{slug}.{group}"


def _object_selector(handler: WebhookHandler) -> dict[str, Any]:
    expressions: list[dict[str, Any]] = []
    for key, value in sorted((handler.labels or {}).items()):
        if value is kopf.PRESENT:
            expressions.append({"key": key, "operator": "Exists"})
        elif value is kopf.ABSENT:
            expressions.append({"key": key, "operator": "DoesNotExist"})
        elif isinstance(value, str):
            expressions.append({"key": key, "operator": "In", "values": [value]})
    return {"matchExpressions": expressions} if expressions else {}


# Conditions a handler's filters cannot express, by handler id.
_MORE_CONDITIONS: dict[str, list[dict[str, str]]] = {
    GATE_PODS: [GATE_PODS_CONDITION],
    ADOPT_PODS: [ADOPT_PODS_CONDITION],
    WARN_DROPPED_FIELD: [WARN_DROPPED_FIELD_CONDITION],
}


SPARING = "not-the-operators-own"
SERVICE_ACCOUNT_USER = "system:serviceaccount:"


def is_service_account(user: str) -> bool:
    """Whether `user` is a ServiceAccount's user name, `system:serviceaccount:NS:NAME`,
    as the API server's ServiceAccount token authenticator names it
    (k8s.io/apiserver/pkg/authentication/serviceaccount `MakeUsername`)."""
    namespace, _, name = user.removeprefix(SERVICE_ACCOUNT_USER).partition(":")
    return user.startswith(SERVICE_ACCOUNT_USER) and bool(namespace) and bool(name)


def spared_user(user: str | None) -> str | None:
    """The user whose writes the webhooks of Muster's kinds leave alone: the operator's,
    and only when it is a ServiceAccount, an identity that belongs to the operator
    alone. `muster run` may be given a person's kubeconfig; sparing that person would
    let every request of theirs skip validation, so then nobody is spared (and the
    operator's own writes are validated like anyone's), which the log says."""
    if user is None or is_service_account(user):
        return user
    logger.warning(
        "the webhooks validate the operator's own writes too: it runs as %s, not as a"
        " ServiceAccount, and only a ServiceAccount's writes are left alone",
        user,
    )
    return None


def sparing(user: str) -> dict[str, str]:
    """The match condition of a webhook that leaves the writes of `user` (the
    operator's ServiceAccount) alone."""
    return {"name": SPARING, "expression": f"request.userInfo.username != {json.dumps(user)}"}


def _spares_the_operator(handler: WebhookHandler) -> bool:
    """Whether the handler is about Muster's own kinds, which the operator writes."""
    return handler.selector is not None and handler.selector.group == GROUP


def _match_conditions(handler: WebhookHandler, operator_user: str | None) -> list[dict[str, str]]:
    """`has()` of every step of the handler's field filter, so others never reach us,
    the handler's own conditions, and for Muster's kinds, not the operator's writes."""
    more = _MORE_CONDITIONS.get(str(handler.id), [])
    if operator_user is not None and _spares_the_operator(handler):
        more = [*more, sparing(operator_user)]
    if not handler.field or handler.value is not kopf.PRESENT:
        return more
    steps = [
        f"object.{'.'.join(handler.field[: depth + 1])}" for depth in range(len(handler.field))
    ]
    name = webhook_name("has-" + "-".join(handler.field), "x").removesuffix(".x")
    return [{"name": name[:63], "expression": " && ".join(f"has({step})" for step in steps)}, *more]


@dataclass(frozen=True, slots=True)
class ServiceReference:
    """The in-cluster Service in front of the webhooks, for `clientConfig.service`."""

    namespace: str
    name: str
    port: int = 443


def _client_config(
    handler: WebhookHandler, *, where: str | ServiceReference, ca_bundle: str
) -> dict[str, Any]:
    """Where the API server calls a handler (at a URL, or through a Service); no
    `caBundle` key while there is none.

    Leaving the key out (rather than empty) lets `kubectl apply` of the manifests keep
    the bundle the operator patched in: apply only removes fields it once set itself.
    """
    path = urllib.parse.quote(str(handler.id))
    client: dict[str, Any]
    if isinstance(where, str):
        client = {"url": f"{where.rstrip('/')}/{path}"}
    else:
        path = path.lower()  # a Service path must be lowercase; see WebhookServer
        client = {"service": {**asdict(where), "path": f"/{path}"}}
    if ca_bundle:
        client["caBundle"] = ca_bundle
    return client


def _webhook(
    handler: WebhookHandler, *, client: dict[str, Any], group: str, operator_user: str | None
) -> dict[str, Any]:
    selector = handler.selector
    plural = None if selector is None else selector.plural or selector.any_name
    if selector is None or not isinstance(plural, str):
        raise ValueError(f"webhook {handler.id} must name its resource by its plural")
    webhook: dict[str, Any] = {
        "name": webhook_name(str(handler.id), group),
        "clientConfig": client,
        "rules": [
            {
                "apiGroups": [selector.group or ""],
                "apiVersions": [selector.version or "*"],
                "resources": [plural],
                "operations": sorted(handler.operations or ["*"]),
                "scope": "*",
            }
        ],
        "failurePolicy": "Ignore" if handler.ignore_failures else "Fail",
        "sideEffects": "NoneOnDryRun" if handler.side_effects else "None",
        "matchPolicy": "Equivalent",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 10,
    }
    if selector_labels := _object_selector(handler):
        webhook["objectSelector"] = selector_labels
    if conditions := _match_conditions(handler, operator_user):
        webhook["matchConditions"] = conditions
    if handler.reason == WebhookType.MUTATING:
        webhook["reinvocationPolicy"] = "Never"
    return webhook


def _adopting(webhook: dict[str, Any], adoption: Adoption) -> dict[str, Any]:
    """The webhook of adopted pods, for the adopted namespaces only, and called again
    when a later webhook names another scheduler."""
    return webhook | {
        "namespaceSelector": dict(adoption.namespace_selector),
        "reinvocationPolicy": "IfNeeded",
    }


def webhook_configurations(
    handlers: Iterable[WebhookHandler],
    *,
    name: str,
    where: str | ServiceReference,
    ca_bundle: bytes,
    group: str,
    adoption: Adoption | None = None,
    operator_user: str | None = None,
) -> list[dict[str, Any]]:
    """The Mutating- and ValidatingWebhookConfiguration serving these handlers.

    `where`: a URL, or the Service in front of them (the in-cluster installation). The
    webhook of adopted pods only with an `adoption`. With `operator_user`, a
    ServiceAccount, the webhooks of Muster's kinds leave that user's writes alone
    (:func:`spared_user`).
    """
    operator_user = spared_user(operator_user)
    encoded = base64.b64encode(ca_bundle).decode("ascii")
    configurations = []
    for kind, reason in ((MUTATING, WebhookType.MUTATING), (VALIDATING, WebhookType.VALIDATING)):
        webhooks = []
        for handler in handlers:
            if handler.reason != reason or (str(handler.id) == ADOPT_PODS and adoption is None):
                continue
            client = _client_config(handler, where=where, ca_bundle=encoded)
            webhook = _webhook(handler, client=client, group=group, operator_user=operator_user)
            if str(handler.id) == ADOPT_PODS and adoption is not None:
                webhook = _adopting(webhook, adoption)
            webhooks.append(webhook)
        configurations.append(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "muster"}},
                "webhooks": webhooks,
            }
        )
    return configurations
