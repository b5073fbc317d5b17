"""The installation manifests on the real control plane: they apply, and their RBAC is enough.

No container engine is needed: the operator runs as a local process, but it
authenticates as the manifests' ServiceAccount (a token from the TokenRequest API)
with exactly the manifests' roles bound and their pod-rights policy judging it, and
keeps its certificate in a Secret as it does in a cluster. The only difference from
an installation is where the API server finds the webhooks (a URL on 127.0.0.1
instead of the Service), so the roles are bound in the test's namespace, the policy
names that namespace's ServiceAccount, and the cluster-scoped names carry a unique
suffix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import ROOT, Kubectl
from tests.e2e.harness import (
    WEBHOOK_CONFIGURATION,
    NodePool,
    OperatorProcess,
    events_for,
    gang_job,
    wait_all_bound,
    wait_for_pod_rights,
    wait_for_reason,
)

pytestmark = pytest.mark.e2e

MANIFESTS = ROOT / "manifests"
BASE = MANIFESTS / "base"
SERVICE_ACCOUNT = "muster-operator"
SECRET = "muster-webhook-tls"
INSTALLED_CONFIGURATION = "muster.scheduling.muster.dev"
INSTALLED_USER = f"system:serviceaccount:muster-system:{SERVICE_ACCOUNT}"
WEBHOOK_KINDS = ("mutatingwebhookconfiguration", "validatingwebhookconfiguration")


def rendered(kubectl: Kubectl, directory: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize` of a directory, as objects."""
    text = kubectl("kustomize", str(directory)).stdout
    return [document for document in yaml.safe_load_all(text) if document]


def test_the_manifests_apply_with_a_server_side_dry_run(kubectl: Kubectl) -> None:
    """Every object is valid for the API server, as `kubectl apply -k manifests/` sends it."""
    exists = kubectl("get", "namespace", "muster-system", check=False).returncode == 0
    # A dry run does not create the namespace the namespaced objects need.
    kubectl("apply", "-f", str(BASE / "namespace.yaml"))
    try:
        applied = kubectl("apply", "-k", str(MANIFESTS), "--dry-run=server").stdout
    finally:
        if not exists:
            kubectl("delete", "namespace", "muster-system", "--wait=false", check=False)
    for kind in ("deployment.apps/muster-operator", "clusterrole.rbac", "service/muster-webhooks"):
        assert kind in applied
    overlay = rendered(kubectl, MANIFESTS / "overlays" / "cert-manager")
    assert {"Certificate", "Issuer"} <= {document["kind"] for document in overlay}


# ---- the operator as its ServiceAccount ----------------------------------------------


@dataclass(frozen=True)
class Identity:
    """The manifests' ServiceAccount in one namespace, with a kubeconfig holding its token."""

    namespace: str
    kubeconfig: Path
    configuration: str
    declared_rules: list[dict[str, Any]]


def isolated(
    documents: list[dict[str, Any]], namespace: str, configuration: str
) -> list[dict[str, Any]]:
    """The RBAC objects bound in `namespace`, cluster-scoped names made unique.

    Only names change: the rules keep every verb and resource, and the webhook
    configurations they name are this test's own.
    """
    suffix = f"-{namespace}"
    for document in documents:
        metadata = document["metadata"]
        if document["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            metadata["name"] += suffix
        else:
            metadata["namespace"] = namespace
        if document["kind"] == "ClusterRoleBinding":
            document["roleRef"]["name"] += suffix
        for subject in document.get("subjects", []):
            subject["namespace"] = namespace
        for rule in document.get("rules", []):
            if INSTALLED_CONFIGURATION in rule.get("resourceNames", []):
                rule["resourceNames"] = [configuration]
    return documents


def token_kubeconfig(kubectl: Kubectl, token: str, path: Path) -> Path:
    """A kubeconfig for the same API server that authenticates with `token` only."""
    admin = json.loads(kubectl("config", "view", "--raw", "--minify", "-o", "json").stdout)
    cluster = admin["clusters"][0]["cluster"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": "token", "user": {"token": token}}],
        "contexts": [{"name": "token", "context": {"cluster": "cluster", "user": "token"}}],
        "current-context": "token",
    }
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
def identity(kubectl: Kubectl, namespace: str, tmp_path: Path) -> Iterator[Identity]:
    configuration = f"muster.{namespace}.scheduling.muster.dev"
    documents = isolated(rendered(kubectl, BASE / "rbac"), namespace, configuration)
    cluster_scoped = [
        f"{document['kind'].lower()}/{document['metadata']['name']}"
        for document in documents
        if document["kind"].startswith("Cluster")
    ]
    kubectl("apply", "-k", str(BASE / "crds"))
    kubectl.apply({"apiVersion": "v1", "kind": "List", "items": documents})
    try:
        kubectl(
            "wait",
            "--for=condition=Established",
            "crd/podgroups.scheduling.muster.dev",
            "crd/workloads.scheduling.muster.dev",
        )
        token = kubectl(
            "create", "token", SERVICE_ACCOUNT, "-n", namespace, "--duration=1h"
        ).stdout.strip()
        rules = [rule for document in documents for rule in document.get("rules", [])]
        yield Identity(
            namespace=namespace,
            kubeconfig=token_kubeconfig(kubectl, token, tmp_path / "operator.kubeconfig"),
            configuration=configuration,
            declared_rules=rules,
        )
    finally:
        kubectl("delete", *cluster_scoped, "--ignore-not-found", check=False)


@pytest.fixture
def pod_rights(identity: Identity, kubectl: Kubectl) -> Iterator[None]:
    """The manifests' pod-rights policy, judging this test's ServiceAccount (its match
    condition names the installation's user), in force before the test goes on."""
    user = f"system:serviceaccount:{identity.namespace}:{SERVICE_ACCOUNT}"
    documents = rendered(kubectl, BASE / "policies")
    for document in documents:
        document["metadata"]["name"] += f"-{identity.namespace}"
        spec = document["spec"]
        if document["kind"] == "ValidatingAdmissionPolicyBinding":
            spec["policyName"] += f"-{identity.namespace}"
        for condition in spec.get("matchConditions", []):
            assert INSTALLED_USER in condition["expression"], condition
            condition["expression"] = condition["expression"].replace(INSTALLED_USER, user)
    kubectl.apply({"apiVersion": "v1", "kind": "List", "items": documents})
    try:
        policy = next(d for d in documents if d["kind"] == "ValidatingAdmissionPolicy")
        wait_for_pod_rights(kubectl, policy["metadata"]["name"], user)
        yield
    finally:
        for document in documents:
            name = f"{document['kind'].lower()}/{document['metadata']['name']}"
            kubectl("delete", name, "--ignore-not-found", check=False)


@pytest.fixture
def sole_operator(operator: OperatorProcess, kubectl: Kubectl) -> Iterator[None]:
    """The session's operator (admin credentials) steps aside, webhooks and all, so that
    whatever happens next is done by the operator under test."""
    operator.stop()
    for kind in WEBHOOK_KINDS:
        kubectl("delete", kind, WEBHOOK_CONFIGURATION, "--ignore-not-found")
    yield
    operator.start()


def local_webhook_configurations(
    kubectl: Kubectl, configuration: str, port: int
) -> list[dict[str, Any]]:
    """The manifests' configurations, calling 127.0.0.1 instead of the Service."""
    documents = rendered(kubectl, BASE / "webhooks")
    for document in documents:
        document["metadata"]["name"] = configuration
        for webhook in document["webhooks"]:
            path = webhook["clientConfig"].pop("service")["path"]
            webhook["clientConfig"]["url"] = f"https://127.0.0.1:{port}{path}"
    return documents


@pytest.fixture
def operator_as_service_account(
    identity: Identity, pod_rights: None, sole_operator: None, kubectl: Kubectl, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """The operator under test, with the manifests' rights and under their pod-rights
    policy."""
    process = OperatorProcess(
        kubeconfig=identity.kubeconfig,
        log_path=tmp_path / "operator.log",
        flags=(
            f"--identity=muster-{identity.namespace}",
            f"--lease-namespace={identity.namespace}",
            f"--webhook-configuration={identity.configuration}",
            f"--webhook-service={identity.namespace}/muster-webhooks",
            f"--webhook-secret={SECRET}",
            "--no-manage-webhooks",
        ),
    )
    configurations = local_webhook_configurations(
        kubectl, identity.configuration, process.webhook_port
    )
    kubectl.apply({"apiVersion": "v1", "kind": "List", "items": configurations})
    try:
        process.start()
        yield process
    finally:
        process.stop()
        for kind in WEBHOOK_KINDS:
            kubectl("delete", kind, identity.configuration, "--ignore-not-found", check=False)


def test_the_operator_schedules_a_gang_with_only_the_manifests_rights(
    operator_as_service_account: OperatorProcess,
    identity: Identity,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    pool.add(gpus=4)
    kubectl.apply(gang_job("train", pool, workers=4), namespace)

    wait_all_bound(kubectl, namespace, "train", 4)
    wait_for_reason(kubectl, namespace, "train", "Scheduled")
    scheduled = [
        event
        for event in events_for(kubectl, namespace, "train")
        if event["reason"] == "Scheduled" and event["involvedObject"]["kind"] == "PodGroup"
    ]
    assert {event["reportingInstance"] for event in scheduled} == {f"muster-{namespace}"}

    # The certificate the API server trusted: in the kubernetes.io/tls layout that
    # cert-manager writes too, its CA patched into both configurations.
    secret = kubectl.json("get", "secret", SECRET, "-n", namespace)
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
    for kind in WEBHOOK_KINDS:
        webhooks = kubectl.json("get", kind, identity.configuration)["webhooks"]
        assert {hook["clientConfig"]["caBundle"] for hook in webhooks} == {secret["data"]["ca.crt"]}
    # No request was refused for want of a right: RBAC's refusals name the user, the
    # pod-rights policy's name itself, and kopf warns of "not enough permissions" when
    # it cannot watch what it wants.
    log = operator_as_service_account.log_path.read_text()
    assert "system:serviceaccount:" not in log, operator_as_service_account.log_tail()
    assert "ValidatingAdmissionPolicy" not in log, operator_as_service_account.log_tail()
    assert "not enough permissions" not in log.lower(), operator_as_service_account.log_tail()


def test_the_service_account_can_do_nothing_beyond_its_declared_rules(
    identity: Identity, kubectl: Kubectl, namespace: str, tmp_path: Path
) -> None:
    as_operator = Kubectl(identity.kubeconfig)
    for refused in (
        ("update", "jobs", "-A"),
        ("delete", "nodes"),
        ("update", "podgroups.scheduling.muster.dev", "-n", namespace),
        ("create", "mutatingwebhookconfigurations"),
        ("patch", "validatingwebhookconfigurations/someone-elses"),
        ("get", "secrets", "-n", "kube-system"),
        ("get", "secrets/another-secret", "-n", namespace),
        ("update", "leases/another-lease", "-n", namespace),
        ("create", "leases", "-n", "kube-system"),
    ):
        answer = as_operator("auth", "can-i", *refused, check=False).stdout.strip()
        assert answer == "no", refused
    forbidden = as_operator("get", "secrets", "-n", namespace, check=False)
    assert forbidden.returncode != 0 and "forbidden" in forbidden.stderr.lower()

    # Every right the token has is a declared one, or one every authenticated user has
    # (what the namespace's `default` ServiceAccount, bound to nothing, may do).
    nobody = token_kubeconfig(
        kubectl,
        kubectl("create", "token", "default", "-n", namespace).stdout.strip(),
        tmp_path / "nobody.kubeconfig",
    )
    granted = resource_rights(Kubectl(identity.kubeconfig), namespace)
    baseline = resource_rights(Kubectl(nobody), namespace)
    assert granted - baseline == expand(identity.declared_rules)


def resource_rights(kubectl: Kubectl, namespace: str) -> set[tuple[str, str, str, str]]:
    """(group, resource, verb, name or "*") the caller may use in `namespace`, from a
    SelfSubjectRulesReview (cluster-wide rules included)."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": namespace},
    }
    answer = kubectl(
        "create", "--validate=false", "-o", "json", "-f", "-", input=json.dumps(review)
    )
    status = json.loads(answer.stdout)["status"]
    assert not status.get("incomplete"), status
    return expand(status["resourceRules"])


def expand(rules: list[dict[str, Any]]) -> set[tuple[str, str, str, str]]:
    return {
        (group, resource, verb, name)
        for rule in rules
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
        for verb in rule.get("verbs", [])
        for name in rule.get("resourceNames") or ["*"]
    }
