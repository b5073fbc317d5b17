#!/usr/bin/env python3
"""Kueue beside the local control plane: its manager as a local process on loopback.

`cluster.py up --kueue` runs this once the control plane is up (as
`python3 -m hack.kueue up`). Kueue runs as Muster's operator does in the tests: a
plain process with its webhooks served on 127.0.0.1, registered by URL with a CA
bundle, so the API server needs no Service or DNS to reach it.

Kueue manages its serving certificate itself (`internalCertManagement`): it keeps
it in a Secret, checks it for the DNS name of its in-cluster Service, injects its CA
into the webhook configurations and the CRDs' conversion webhooks, and waits for
the files to appear in its certificate directory (where a Pod would mount the
Secret). So the Secret is made first, with a certificate that names both that
Service and 127.0.0.1, and the same files are written to the directory: Kueue finds
them valid and keeps them. (With its certificate management off, Kueue insists on
a metrics certificate under /etc/kueue, outside anything a test may own.)

Only the webhooks for batch Jobs and Kueue's own API are registered (the only
integration enabled is `batch/job`); the Job webhooks are scoped to Jobs with the
queue-name label, so no other Job waits on Kueue.

Kueue is told to evict a Job whose pods are not all Ready within
`PODS_READY_TIMEOUT` of its admission (`waitForPodsReady`): that is how a Job that
Kueue admitted but Muster cannot place is handed back (docs/kueue.md). The tests
want that patience short; a benchmark burst, whose pods take longer than that to be
created on a busy machine, asks for a longer one (`up --pods-ready-timeout=5m`).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from devtools.builds import cache_dir, versions
from devtools.cluster.layout import KUBECONFIG, KUEUE, STATE, log
from devtools.cluster.pki import issue_serving_cert, make_ca
from devtools.cluster.probes import http_ok
from devtools.cluster.processes import start, wait_for
from devtools.kubectl import Kubectl
from devtools.ports import free_port

NAMESPACE = "kueue-system"
SERVICE = "kueue-webhook-service"
SECRET = "kueue-webhook-server-cert"
CA_NAME = "kueue-ca"  # the name Kueue checks its CA certificate for
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"

# `waitForPodsReady`: a Job whose pods are not all Ready this long after Kueue
# admitted it is evicted and requeued, after a backoff of BASE x 2^(n-1) seconds.
PODS_READY_TIMEOUT = "40s"
REQUEUE_BACKOFF_BASE_SECONDS = 10

# CRDs whose versions Kueue converts (its kustomization's conversion patches).
CONVERTED = ("localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters")
# The API groups of the webhooks registered (the others serve integrations left off).
WEBHOOK_GROUPS = frozenset({"batch", "kueue.x-k8s.io"})
# The dev cluster's admin, as `cluster.py up --kueue` runs this on it.
kubectl = Kubectl(KUBECONFIG)


def kueue_dir() -> Path:
    """Where `build.sh` put Kueue's manager, CRDs and webhook manifests."""
    return cache_dir() / "kueue" / versions()["KUEUE_VERSION"]


def make_certificates(pki: Path) -> None:
    """A CA of Kueue's own (named as Kueue checks it) and a serving certificate for
    its Service's DNS name and 127.0.0.1."""
    pki.mkdir(parents=True, exist_ok=True)
    make_ca(
        pki,
        f"/O=kueue/CN={CA_NAME}",
        f"subjectAltName=DNS:{CA_NAME}",
        "basicConstraints=critical,CA:TRUE",
        "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign",
    )
    issue_serving_cert(pki, f"/CN={SERVICE}", f"DNS:{SERVICE}.{NAMESPACE}.svc,IP:127.0.0.1")


def secret(pki: Path) -> dict[str, Any]:
    """The Secret Kueue keeps its certificates in, holding ours."""
    data = {
        name: base64.b64encode((pki / name).read_bytes()).decode()
        for name in ("ca.crt", "ca.key", "tls.crt", "tls.key")
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": data,
    }


def as_json(path: Path) -> list[dict[str, Any]]:
    """The objects of a YAML file, read by kubectl (this module has no YAML parser)."""
    text = kubectl("create", "--dry-run=client", "-o", "json", "-f", str(path)).stdout
    decoder = json.JSONDecoder()
    items: list[dict[str, Any]] = []
    at = 0
    while text[at:].strip():  # one JSON document per object, one after the other
        at += len(text[at:]) - len(text[at:].lstrip())
        obj, at = decoder.raw_decode(text, at)
        items.extend(obj["items"] if obj.get("kind") == "List" else [obj])
    return items


def crds(objects: list[dict[str, Any]], url: str, ca_bundle: str) -> list[dict[str, Any]]:
    """Kueue's CRDs, those with several versions converted by its webhook on loopback."""
    found = []
    for crd in objects:
        if crd["spec"]["names"]["plural"] in CONVERTED:
            crd["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {"url": f"{url}/convert", "caBundle": ca_bundle},
                    "conversionReviewVersions": ["v1"],
                },
            }
        found.append(crd)
    return found


def webhook_configurations(
    objects: list[dict[str, Any]], url: str, ca_bundle: str
) -> list[dict[str, Any]]:
    """Kueue's webhook configurations under the names Kueue injects its CA into, with
    only the webhooks for Jobs and Kueue's API, each called by URL on loopback."""
    made = []
    for configuration in objects:
        webhooks = []
        for webhook in configuration["webhooks"]:
            groups = {group for rule in webhook["rules"] for group in rule["apiGroups"]}
            if not groups <= WEBHOOK_GROUPS:
                continue
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {"url": f"{url}{path}", "caBundle": ca_bundle}
            if "batch" in groups:
                webhook["objectSelector"] = {
                    "matchExpressions": [{"key": QUEUE_NAME_LABEL, "operator": "Exists"}]
                }
            webhooks.append(webhook)
        kind = configuration["kind"]
        prefix = "mutating" if kind.startswith("Mutating") else "validating"
        configuration["metadata"] = {"name": f"kueue-{prefix}-webhook-configuration"}
        configuration["webhooks"] = webhooks
        made.append(configuration)
    return made


def configuration(
    ports: dict[str, int], cert_dir: Path, pods_ready_timeout: str = PODS_READY_TIMEOUT
) -> dict[str, Any]:
    """Kueue's Configuration: loopback addresses, no leader election, Jobs only, and
    the patience of `waitForPodsReady` (a Go duration)."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['health']}"},
        "metrics": {"bindAddress": f"127.0.0.1:{ports['metrics']}"},
        "webhook": {"host": "127.0.0.1", "port": ports["webhook"], "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {
            "enable": True,
            "webhookServiceName": SERVICE,
            "webhookSecretName": SECRET,
        },
        "clientConnection": {"qps": 200, "burst": 400},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": ["batch/job"]},
        "waitForPodsReady": {
            "timeout": pods_ready_timeout,
            "blockAdmission": False,
            "requeuingStrategy": {
                "timestamp": "Eviction",
                "backoffBaseSeconds": REQUEUE_BACKOFF_BASE_SECONDS,
            },
        },
    }


def apply_json(objects: list[dict[str, Any]]) -> None:
    """Server-side: Kueue's Workload CRD is larger than client-side apply's annotation."""
    listed = {"apiVersion": "v1", "kind": "List", "items": objects}
    kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=muster-cluster",
        "-f",
        "-",
        input=json.dumps(listed),
    )


def up(pods_ready_timeout: str = PODS_READY_TIMEOUT) -> None:
    source = kueue_dir()
    binary = source / "bin" / "kueue"
    if not binary.exists():
        log(f"FAILED: {binary} is missing; run hack/build.sh")
        sys.exit(1)
    home = STATE / "kueue"
    pki = home / "pki"
    make_certificates(pki)
    cert_dir = home / "certs"
    cert_dir.mkdir(parents=True, exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        (cert_dir / name).write_bytes((pki / name).read_bytes())
    ca_bundle = base64.b64encode((pki / "ca.crt").read_bytes()).decode()
    ports = {name: free_port() for name in ("health", "metrics", "webhook")}
    url = f"https://127.0.0.1:{ports['webhook']}"

    kubectl("create", "namespace", NAMESPACE)
    apply_json([secret(pki)])
    apply_json(crds(as_json(source / "crds"), url, ca_bundle))
    kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    apply_json(webhook_configurations(as_json(source / "webhooks.yaml"), url, ca_bundle))
    config = home / "config.yaml"
    config.write_text(
        json.dumps(configuration(ports, cert_dir, pods_ready_timeout), indent=2) + "\n"
    )
    start(
        KUEUE,
        [
            str(binary),
            f"--config={config}",
            f"--kubeconfig={KUBECONFIG}",
            # Its API server would need an APIService and in-cluster routing, and its
            # default port would clash between clusters run side by side.
            "--feature-gates=VisibilityOnDemand=false",
        ],
    )
    health = f"http://127.0.0.1:{ports['health']}"
    wait_for("Kueue /readyz", lambda: http_ok(f"{health}/readyz"), KUEUE)
    probe = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "probe"},
    }

    def webhooks_answer() -> bool:
        kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe))
        return True

    wait_for("Kueue's webhooks through the API server", webhooks_answer, KUEUE)
    log(f"Kueue {versions()['KUEUE_VERSION']} up (webhooks on {url})")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python3 -m hack.kueue", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("command", choices=["up"])
    parser.add_argument(
        "--pods-ready-timeout",
        default=PODS_READY_TIMEOUT,
        help=f"waitForPodsReady's timeout, a Go duration (default {PODS_READY_TIMEOUT})",
    )
    args = parser.parse_args(argv)
    up(args.pods_ready_timeout)


if __name__ == "__main__":
    main()
