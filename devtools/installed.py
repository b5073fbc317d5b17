"""Muster on the local control plane exactly as the chart installs it.

What runs here is what users run: every object of manifests/, the chart rendered
with its default values (hack/manifests.py; a unit test fails when they differ), as
`helm install muster charts/muster -n muster-system` or `kubectl apply -k manifests/`
creates it (the CRDs,
the ServiceAccount `muster-system/muster-operator` with exactly the manifests' roles,
the pod-rights policy that judges it, the webhook configurations, the PriorityClass,
the Service and its budgets), and the operator with the Deployment's own settings,
authenticated as that ServiceAccount. The operator is a local process rather than a
pod (no kubelet runs it), which changes three things and nothing else:

- it authenticates with a token of the ServiceAccount (the TokenRequest API, as the
  kubelet gets one for a pod) in a kubeconfig instead of a mounted one;
- the webhook configurations call `https://127.0.0.1:PORT` where the manifests name
  the Service, since no Service routes to a local process;
- the Deployment's addresses, identity and log format (`MUSTER_*_HOST`, `*_PORT`,
  `MUSTER_IDENTITY`, `MUSTER_LOG_FORMAT`) are chosen by the caller.

Or it is the image, run with podman as the Deployment runs its container
(devtools/container.py): the token is then mounted where the kubelet mounts it, and only
the last two differ. `make run` (`IMAGE=1`: from the image) starts Muster this way
against the dev cluster; the e2e harness does the same on its clusters, each replica
from the image where a test asks (tests/e2e/support/image.py).
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from devtools import helm
from devtools.builds import ROOT
from devtools.cluster.layout import MUSTER_ABSENT
from devtools.kubectl import Kubectl

MANIFESTS = ROOT / "manifests"
NAMESPACE = helm.NAMESPACE
SERVICE_ACCOUNT = "muster-operator"
USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
WEBHOOK_CONFIGURATION = "muster.scheduling.muster.dev"
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
POD_RIGHTS_POLICY = "muster-operator-pod-rights"
CRDS = ("crd/podgroups.scheduling.muster.dev", "crd/workloads.scheduling.muster.dev")

# The Deployment's settings a local process chooses for itself.
_LOCAL_SETTINGS = frozenset(
    {
        "MUSTER_WEBHOOK_HOST",
        "MUSTER_WEBHOOK_PORT",
        "MUSTER_HEALTH_HOST",
        "MUSTER_HEALTH_PORT",
        "MUSTER_IDENTITY",
        "MUSTER_LOG_FORMAT",
    }
)


def rendered(kubeconfig: Path, directory: Path = MANIFESTS) -> list[dict[str, Any]]:
    """`kubectl kustomize` of the manifests, as objects."""
    text = Kubectl(kubeconfig)("kustomize", str(directory)).stdout
    return [document for document in yaml.safe_load_all(text) if document]


def chart_documents(values: tuple[str, ...]) -> list[dict[str, Any]]:
    """The chart rendered by `helm template` with `values` over its defaults, as objects."""
    return [document for document in yaml.safe_load_all(helm.template(*values)) if document]


def deployment(documents: list[dict[str, Any]]) -> dict[str, Any]:
    [found] = [document for document in documents if document["kind"] == "Deployment"]
    return found


def operator_environment(documents: list[dict[str, Any]]) -> dict[str, str]:
    """The `MUSTER_*` settings of the Deployment's container, `$(VAR)` references
    resolved as the kubelet resolves them, less those a local process chooses."""
    [container] = deployment(documents)["spec"]["template"]["spec"]["containers"]
    values: dict[str, str] = {}
    for variable in container.get("env", []):
        if "value" in variable:
            value = str(variable["value"])
        elif variable.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == (
            "metadata.namespace"
        ):
            value = NAMESPACE
        else:
            continue
        for name, known in values.items():
            value = value.replace(f"$({name})", known)
        values[variable["name"]] = value
    return {
        name: value
        for name, value in values.items()
        if name.startswith("MUSTER_") and name not in _LOCAL_SETTINGS
    }


def called_at(document: dict[str, Any], url: str) -> dict[str, Any]:
    """A webhook configuration whose webhooks call `url` instead of the Service."""
    for webhook in document["webhooks"]:
        path = webhook["clientConfig"].pop("service").get("path", "")
        webhook["clientConfig"]["url"] = f"{url}{path}"
    return document


def install(kubeconfig: Path, webhook_url: str, values: tuple[str, ...] = ()) -> dict[str, str]:
    """Apply every object of the manifests but the Deployment, the webhooks calling
    `webhook_url`; wait until the CRDs are served and the pod-rights policy judges the
    ServiceAccount. The dev cluster's warning that Muster is absent goes. Returns the
    operator's settings (`operator_environment`). With `values` (`path=value`), the
    chart rendered with them over its defaults instead of the manifests."""
    documents = chart_documents(values) if values else rendered(kubeconfig)
    objects = [
        called_at(document, webhook_url) if document["kind"] in WEBHOOK_KINDS else document
        for document in documents
        if document["kind"] != "Deployment"
    ]
    # The namespace and the CRDs first: the rest lives in the one or is read by the other.
    first = [document for document in objects if document["kind"] == "Namespace"]
    if first:  # the chart alone has none: its namespace exists already
        Kubectl(kubeconfig)("apply", "-f", "-", input=json.dumps(as_list(first)))
    Kubectl(kubeconfig)("apply", "--server-side", "--force-conflicts", "-f", "-",
            input=json.dumps(as_list(objects)))  # fmt: skip
    Kubectl(kubeconfig)("wait", "--for=condition=Established", *CRDS, "--timeout=60s", timeout=90)
    Kubectl(kubeconfig)("delete", "-f", str(MUSTER_ABSENT), "--ignore-not-found")
    wait_for_pod_rights(kubeconfig)
    return operator_environment(documents)


def remove_webhooks(kubeconfig: Path) -> None:
    """Take the webhook configurations away, so that a cluster whose operator is gone
    does not refuse every opted-in Job (they fail closed)."""
    for kind in WEBHOOK_KINDS:
        Kubectl(kubeconfig)("delete", kind.lower(), WEBHOOK_CONFIGURATION, "--ignore-not-found")


def uninstall(kubeconfig: Path) -> None:
    """Delete what `install` applied, but for the namespace and the CRDs (and so every
    PodGroup and Workload, which outlive the operator as a Helm release's do): the
    webhook configurations first (`remove_webhooks`), then the rest. None of it carries
    Helm's ownership annotations, so `helm install` would refuse to adopt any of it
    (`invalid ownership metadata`): once it is gone the chart installs where `make
    run` ran, and the chart's CRDs, which Helm skips when they exist, are the same."""
    remove_webhooks(kubeconfig)
    kept = {"Namespace", "CustomResourceDefinition", "Deployment"}
    objects = [document for document in rendered(kubeconfig) if document["kind"] not in kept]
    Kubectl(kubeconfig)("delete", "--ignore-not-found", "--wait=false", "-f", "-",
            input=json.dumps(as_list(objects)))  # fmt: skip


def as_list(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": objects}


def service_account_token(kubeconfig: Path, duration: str = "48h") -> str:
    """A token of the operator's ServiceAccount from the TokenRequest API, as the
    kubelet gets one for a pod; it outlasts any test run rather than being renewed."""
    return Kubectl(kubeconfig)(
        "create", "token", SERVICE_ACCOUNT, "-n", NAMESPACE, f"--duration={duration}"
    ).stdout.strip()


def service_account_kubeconfig(kubeconfig: Path, path: Path) -> Path:
    """A kubeconfig for the same API server that authenticates as the operator's
    ServiceAccount only (`service_account_token`)."""
    return token_kubeconfig(kubeconfig, service_account_token(kubeconfig), path)


def token_kubeconfig(kubeconfig: Path, token: str, path: Path) -> Path:
    """A kubeconfig for the API server of `kubeconfig` that authenticates with `token`."""
    admin = Kubectl(kubeconfig).json("config", "view", "--raw", "--minify")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": admin["clusters"][0]["cluster"]}],
        "users": [{"name": "token", "user": {"token": token}}],
        "contexts": [{"name": "token", "context": {"cluster": "cluster", "user": "token"}}],
        "current-context": "token",
    }
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


def wait_for_pod_rights(
    kubeconfig: Path,
    policy: str = POD_RIGHTS_POLICY,
    user: str = USER,
    timeout: float = 60,
) -> None:
    """Wait until the pod-rights ValidatingAdmissionPolicy `policy` judges `user`.

    A policy and its binding take effect a while after they are created (the API
    server's admission reads them from an informer), so an image change of a probe
    pod is tried (as a dry run) until the policy refuses it.
    """
    name = f"pod-rights-probe-{uuid.uuid4().hex[:6]}"
    probe = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulingGates": [{"name": "example.com/never"}],
            "containers": [{"name": "main", "image": "registry.example/probe:1"}],
        },
    }
    image = {"spec": {"containers": [{"name": "main", "image": "registry.example/other:1"}]}}
    patch = (
        "patch", "pod", name, "-n", "default", f"--as={user}", "--dry-run=server",
        "-p", json.dumps(image),
    )  # fmt: skip
    kubectl = Kubectl(kubeconfig)
    kubectl("apply", "-f", "-", input=json.dumps(probe))
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            answer = kubectl(*patch, check=False)
            if f"ValidatingAdmissionPolicy '{policy}'" in answer.stderr:
                return
            time.sleep(0.25)
        raise RuntimeError(f"the ValidatingAdmissionPolicy {policy} never judged {user}")
    finally:
        Kubectl(kubeconfig)("delete", "pod", name, "-n", "default", "--wait=false")
