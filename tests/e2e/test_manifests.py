"""The installation manifests on the real control plane: they apply, and their RBAC is enough.

Every e2e test runs the operator as installed (devtools/installed.py, tests/e2e/support/harness.py):
a local process authenticated as the manifests' ServiceAccount, with exactly the
manifests' roles and their pod-rights policy judging it, its certificate in a Secret
as in a cluster. These tests check that this is so, and that the rights are exactly
the declared ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from devtools.builds import ROOT
from devtools.factories import NodePool, gang_job
from devtools.installed import NAMESPACE, USER, rendered, token_kubeconfig
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess

from tests.e2e.support.harness import (
    WEBHOOK_CONFIGURATION,
    gang_scheduled_by,
    releases_for,
    wait_all_bound,
    wait_for_reason,
)
from tests.e2e.support.image import process_and_image

pytestmark = pytest.mark.e2e

MANIFESTS = ROOT / "manifests"
SECRET = "muster-webhook-tls"
WEBHOOK_KINDS = ("mutatingwebhookconfiguration", "validatingwebhookconfiguration")


def test_the_manifests_apply_with_a_server_side_dry_run(
    operator: OperatorProcess, kubectl: Kubectl
) -> None:
    """Every object is valid for the API server, as `kubectl apply -k manifests/` sends it
    (a dry run needs the namespace, which the session's installation made)."""
    applied = kubectl(
        "apply", "--server-side", "--force-conflicts", "-k", str(MANIFESTS), "--dry-run=server"
    ).stdout
    for kind in ("deployment.apps/muster-operator", "clusterrole.rbac", "service/muster-webhooks"):
        assert kind in applied
    overlay = rendered(kubectl.kubeconfig, MANIFESTS / "overlays" / "cert-manager")
    assert {"Certificate", "Issuer"} <= {document["kind"] for document in overlay}


# ---- the operator as its ServiceAccount ----------------------------------------------


@process_and_image
def test_the_operator_schedules_a_gang_with_only_the_manifests_rights(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    """The session's operator runs as installed (tests/e2e/support/harness.py), as a local
    process or from the image: its rights are the manifests' and nothing it asked for
    was refused; the trace it records (from the image: to a mounted directory)
    replays to its decisions."""
    pool.add(gpus=4)
    kubectl.apply(gang_job("train", pool, workers=4), namespace)

    pods = wait_all_bound(kubectl, namespace, "train", 4)
    wait_for_reason(kubectl, namespace, "train", "Scheduled")
    assert gang_scheduled_by(kubectl, namespace, "train") == {operator.identity}
    released = releases_for(operator.replayed(), namespace, "train")
    assert sorted(released) == sorted(pod["metadata"]["name"] for pod in pods)
    whoami = Kubectl(operator.credentials)("auth", "whoami", "-o", "json").stdout
    assert json.loads(whoami)["status"]["userInfo"]["username"] == USER

    # The certificate the API server trusted: written into the Secret the manifests
    # made empty (Opaque), in the layout of the files cert-manager writes too, its CA
    # patched into both configurations.
    secret = kubectl.json("get", "secret", SECRET, "-n", NAMESPACE)
    assert secret["type"] == "Opaque"
    assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
    for kind in WEBHOOK_KINDS:
        webhooks = kubectl.json("get", kind, WEBHOOK_CONFIGURATION)["webhooks"]
        assert {hook["clientConfig"]["caBundle"] for hook in webhooks} == {secret["data"]["ca.crt"]}
    # No request was refused for want of a right: RBAC's refusals name the user, the
    # pod-rights policy's name itself, and kopf warns of "not enough permissions" when
    # it cannot watch what it wants.
    log = operator.log_path.read_text()
    assert "system:serviceaccount:" not in log, operator.log_tail()
    assert "ValidatingAdmissionPolicy" not in log, operator.log_tail()
    assert "not enough permissions" not in log.lower(), operator.log_tail()


def test_the_service_account_can_do_nothing_beyond_its_declared_rules(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, tmp_path: Path
) -> None:
    as_operator = Kubectl(operator.service.credentials)
    for refused in (
        ("update", "jobs", "-A"),
        ("delete", "nodes"),
        ("update", "podgroups.scheduling.muster.dev", "-n", namespace),
        ("create", "mutatingwebhookconfigurations"),
        ("patch", "validatingwebhookconfigurations/someone-elses"),
        ("get", "secrets", "-n", "kube-system"),
        ("get", "secrets/another-secret", "-n", NAMESPACE),
        ("update", "leases/another-lease", "-n", NAMESPACE),
        ("create", "leases", "-n", "kube-system"),
    ):
        answer = as_operator("auth", "can-i", *refused, check=False).stdout.strip()
        assert answer == "no", refused
    forbidden = as_operator("get", "secrets", "-n", NAMESPACE, check=False)
    assert forbidden.returncode != 0 and "forbidden" in forbidden.stderr.lower()

    # Every right the token has is a declared one, or one every authenticated user has
    # (what a `default` ServiceAccount, bound to nothing, may do).
    nobody = token_kubeconfig(
        kubectl.kubeconfig,
        kubectl("create", "token", "default", "-n", namespace).stdout.strip(),
        tmp_path / "nobody.kubeconfig",
    )
    rules = {
        kind: [rule for document in documents if document["kind"] == kind
               and document["metadata"]["name"] in bound_to_operator(documents)
               for rule in document["rules"]]
        for documents in [rendered(kubectl.kubeconfig)]
        for kind in ("ClusterRole", "Role")
    }  # fmt: skip
    for where, declared in (
        (NAMESPACE, rules["ClusterRole"] + rules["Role"]),  # the Role holds here only
        (namespace, rules["ClusterRole"]),
    ):
        granted = resource_rights(as_operator, where)
        baseline = resource_rights(Kubectl(nobody), where)
        assert granted - baseline == expand(declared), where


def bound_to_operator(documents: list[dict[str, Any]]) -> set[str]:
    """The roles the manifests bind to the operator's ServiceAccount (the dashboard's
    read-only ClusterRole is installed too, bound to no one unless the page is served)."""
    return {
        document["roleRef"]["name"]
        for document in documents
        if document["kind"] in ("ClusterRoleBinding", "RoleBinding")
        and any(f"system:serviceaccount:{subject.get('namespace')}:{subject['name']}" == USER
                for subject in document["subjects"])
    }  # fmt: skip


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
