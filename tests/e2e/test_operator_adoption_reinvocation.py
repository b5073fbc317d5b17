"""The `adopt-pods` webhook re-invoked after a later admission step (docs/frameworks.md).

kube-apiserver calls mutating webhooks in the order of their configurations' names,
then of their places in the configuration, and calls again, once, the webhooks marked
`reinvocationPolicy: IfNeeded` that it called before a later one changed the object.
The later step here is a webhook of a configuration named after Muster's, served by a
small HTTPS server inside the test (its certificate from the cluster's PKI helpers):
it names Volcano's scheduler in every pod of the test's namespace, and names the
Volcano group of a pod that names none. It records each pod as it saw it, which tells
that Muster's first call came before it; the stored pod tells that Muster's second
call came after.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from devtools.cluster import pki
from devtools.factories import NodePool
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.ports import free_port
from devtools.waiting import wait_until

from muster.api.adoption import DEFAULT_SCHEDULER, VOLCANO
from tests.e2e.support.adoption import adopt, foreign_group, member, wait_for_phase
from tests.e2e.support.harness import GROUP_LABEL, WEBHOOK_CONFIGURATION, is_gated, wait_all_bound

LATER_CONFIGURATION = "names-volcano.e2e.muster.dev"
GROUP_ANNOTATION = str(VOLCANO.member_annotation)


@dataclass
class LaterWebhook:
    """A mutating webhook that names Volcano in each pod it is called for, and the
    Volcano group `group` in one that names none; `seen` holds each pod as it came."""

    certs: Path
    group: str
    port: int = field(default_factory=free_port)
    seen: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        webhook = self

        class Review(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                body = json.dumps(
                    {**review, "response": webhook.respond(review["request"])}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: what it answered is in `seen`."""

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.certs / "tls.crt", self.certs / "tls.key")
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Review)
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def respond(self, request: dict[str, Any]) -> dict[str, Any]:
        pod = request["object"]
        self.seen.setdefault(pod["metadata"]["name"], []).append(pod)
        patch: list[dict[str, Any]] = [
            {"op": "add", "path": "/spec/schedulerName", "value": VOLCANO.scheduler_name}
        ]
        annotations = pod["metadata"].get("annotations")
        if annotations is None:
            value: Any = {GROUP_ANNOTATION: self.group}
            patch.append({"op": "add", "path": "/metadata/annotations", "value": value})
        elif GROUP_ANNOTATION not in annotations:
            path = "/metadata/annotations/" + GROUP_ANNOTATION.replace("/", "~1")
            patch.append({"op": "add", "path": path, "value": self.group})
        return {
            "uid": request["uid"],
            "allowed": True,
            "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
        }

    def configuration(self, namespace: str) -> dict[str, Any]:
        """Its configuration: pods created in `namespace` only, called once."""
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": LATER_CONFIGURATION},
            "webhooks": [
                {
                    "name": LATER_CONFIGURATION,
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{self.port}/names-volcano",
                        "caBundle": base64.b64encode((self.certs / "ca.crt").read_bytes()).decode(),
                    },
                    "rules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["pods"],
                        }
                    ],
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": namespace}
                    },
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "reinvocationPolicy": "Never",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": 10,
                }
            ],
        }


@pytest.fixture
def later_webhook(kubectl: Kubectl, namespace: str, tmp_path: Path) -> Iterator[LaterWebhook]:
    """The later webhook, serving and configured for the test's namespace."""
    pki.make_ca(tmp_path, "/CN=names-volcano-ca")
    pki.issue_serving_cert(tmp_path, "/CN=names-volcano", "IP:127.0.0.1")
    webhook = LaterWebhook(tmp_path, group="gang")
    webhook.start()
    try:
        kubectl.apply(webhook.configuration(namespace))
        yield webhook
    finally:
        kubectl("delete", "mutatingwebhookconfiguration", LATER_CONFIGURATION, check=False)
        webhook.stop()


def both_called(kubectl: Kubectl, namespace: str, webhook: LaterWebhook, pool: NodePool) -> bool:
    """Whether a pod created now (a dry run) goes through Muster's webhook and then the
    later one: the API server sees new configurations and namespace labels a moment
    after they are written."""
    probe = member(VOLCANO, "gang", "probe", pool)
    kubectl("create", "--dry-run=server", "-n", namespace, "-f", "-", input=json.dumps(probe))
    return any(
        GROUP_LABEL in (pod["metadata"].get("labels") or {})
        for pod in webhook.seen.pop("probe", [])
    )


def test_a_later_webhook_naming_volcano_is_undone_and_the_gang_starts_whole(
    adopting: OperatorProcess,
    later_webhook: LaterWebhook,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    assert WEBHOOK_CONFIGURATION < LATER_CONFIGURATION  # so it is called after Muster's
    adopt(kubectl, namespace)
    for _ in range(3):
        pool.add(gpus=8)
    wait_until(
        "Muster's webhook and the later one on the namespace's pods",
        lambda: both_called(kubectl, namespace, later_webhook, pool),
    )
    kubectl.apply(foreign_group(VOLCANO, "gang", 3), namespace)
    for index in range(3):
        kubectl.apply(member(VOLCANO, "gang", f"gang-{index}", pool), namespace)
    # A pod that names its group only through the later webhook.
    late = member(VOLCANO, "gang", "named-late", pool)
    del late["metadata"]["annotations"]
    kubectl.apply(late, namespace)

    # The later webhook was called once for each pod, after Muster's first call: it saw
    # the group's members already labelled, gated and given the default scheduler.
    for index in range(3):
        [seen] = later_webhook.seen[f"gang-{index}"]
        assert seen["metadata"]["labels"][GROUP_LABEL] == "gang"
        assert is_gated(seen)
        assert seen["spec"]["schedulerName"] == DEFAULT_SCHEDULER
    # Muster's second call undid its change: the members keep the default scheduler, are
    # born gated, and the gang starts whole.
    pods = wait_all_bound(kubectl, namespace, "gang", 3, timeout=120)
    assert {pod["spec"]["schedulerName"] for pod in pods} == {DEFAULT_SCHEDULER}
    assert {pod["metadata"]["annotations"][GROUP_ANNOTATION] for pod in pods} == {"gang"}
    wait_for_phase(kubectl, VOLCANO, namespace, "gang", "Running")

    # The API server calls again only the webhooks it called the first time: Muster's
    # matches a pod by its group's label or annotation, which this one did not carry
    # then, so the pod stays as the later webhook left it, not a member of the gang.
    [seen] = later_webhook.seen["named-late"]
    assert GROUP_LABEL not in (seen["metadata"].get("labels") or {})
    stored = kubectl.json("get", "pod", "named-late", "-n", namespace)
    assert stored["metadata"]["annotations"][GROUP_ANNOTATION] == "gang"
    assert stored["spec"]["schedulerName"] == VOLCANO.scheduler_name
    assert GROUP_LABEL not in (stored["metadata"].get("labels") or {})
    assert not is_gated(stored) and not stored["spec"].get("nodeName")
