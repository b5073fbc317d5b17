"""The chart on the real control plane: it renders objects the API server accepts (with
the default values, for cert-manager, and with changed values); `helm install`
creates every object; `helm upgrade` with changed values keeps every PodGroup and
Workload; `helm uninstall` leaves the CRDs.

The session's cluster already runs Muster as the chart installs it by default (the
release `muster` in muster-system: tests/e2e/support/harness.py, via the rendered
manifests), so the release here is named otherwise, which names every object of it
otherwise, the cluster-scoped ones too. Its Deployment's pods cannot run (no container
runs on KWOK nodes): a nodeSelector that no node matches keeps them Pending, so they
take nothing from other tests' nodes. While it is installed its webhooks, which fail
closed, have no replica to call: no PodGroup or Workload can be created or changed
anywhere, so the test makes its own first, and uninstalls in any case.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from devtools import helm
from devtools.installed import CRDS
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

pytestmark = pytest.mark.e2e

RELEASE = "e2e"  # its objects are named e2e-muster-...
# Values of the release: its pods stay Pending (see above).
VALUES = {"nodeSelector": {"muster.dev/e2e-nowhere": "true"}}
CHANGED = ("replicas=3", "settings.releaseTimeout=90", "settings.logLevel=debug")
# Stand-ins for cert-manager's CRDs, so that its Certificate and Issuer can be sent in a
# dry run (the cluster has no cert-manager): any spec is accepted, and the rest of the
# cert-manager variant is validated for real.
CERT_MANAGER_KINDS = {"Certificate": "certificates", "Issuer": "issuers"}


def documents(text: str) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(text) if document]


def applied_dry_run(kubectl: Kubectl, text: str) -> str:
    return kubectl(
        "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-", input=text
    ).stdout


def stand_in(kind: str, plural: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.cert-manager.io"},
        "spec": {
            "group": "cert-manager.io",
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture
def cert_manager_crds(kubectl: Kubectl) -> Iterator[None]:
    names = [f"crd/{plural}.cert-manager.io" for plural in CERT_MANAGER_KINDS.values()]
    for kind, plural in CERT_MANAGER_KINDS.items():
        kubectl.apply(stand_in(kind, plural))
    kubectl("wait", "--for=condition=Established", *names, "--timeout=30s")
    yield
    kubectl("delete", *names, "--ignore-not-found", check=False)


def test_the_chart_applies_with_a_server_side_dry_run(
    operator: OperatorProcess, kubectl: Kubectl
) -> None:
    """The default values, as `helm install` sends them (a dry run needs the namespace,
    which the session's installation made)."""
    rendered = helm.template()
    applied = applied_dry_run(kubectl, rendered)
    for document in documents(rendered):
        assert f"{document['metadata']['name']} serverside-applied" in applied, document["kind"]


def test_the_cert_manager_variant_applies_with_a_server_side_dry_run(
    operator: OperatorProcess, kubectl: Kubectl, cert_manager_crds: None
) -> None:
    rendered = helm.template(*helm.CERT_MANAGER)
    assert {"Certificate", "Issuer"} <= {document["kind"] for document in documents(rendered)}
    applied_dry_run(kubectl, rendered)


def test_changed_values_in_another_namespace_apply_with_a_server_side_dry_run(
    kubectl: Kubectl, namespace: str
) -> None:
    rendered = helm.template("replicas=3", namespace=namespace)
    applied_dry_run(kubectl, rendered)
    [deployment] = [d for d in documents(rendered) if d["kind"] == "Deployment"]
    assert (deployment["metadata"]["namespace"], deployment["spec"]["replicas"]) == (namespace, 3)


def gang_objects(kubectl: Kubectl, namespace: str) -> dict[str, str]:
    """kind/name -> uid of every PodGroup and Workload of the namespace."""
    found = kubectl.json("get", "podgroups,workloads", "-n", namespace)["items"]
    return {f"{o['kind']}/{o['metadata']['name']}": o["metadata"]["uid"] for o in found}


def make_gang_objects(kubectl: Kubectl, namespace: str) -> dict[str, str]:
    kubectl.apply(
        {
            "apiVersion": "scheduling.muster.dev/v1beta1",
            "kind": "Workload",
            "metadata": {"name": "mpi"},
            "spec": {
                "podGroupTemplates": [
                    {"name": "launcher", "schedulingPolicy": {"basic": {}}},
                    {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}},
                ]
            },
        },
        namespace,
    )
    kubectl.apply(
        {
            "apiVersion": "scheduling.muster.dev/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "alone"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
        },
        namespace,
    )
    # The operator expands the Workload into its PodGroups.
    wait_until(
        "the Workload's PodGroups",
        lambda: (
            {"PodGroup/mpi-launcher", "PodGroup/mpi-workers"}
            <= set(gang_objects(kubectl, namespace))
        ),
    )
    return gang_objects(kubectl, namespace)


def installed(kubectl: Kubectl, rendered: str) -> set[str]:
    """kind/name of each object of `rendered` that exists."""
    found = kubectl("get", "--ignore-not-found", "-o", "json", "-f", "-", input=rendered).stdout
    items = json.loads(found)["items"] if found.strip() else []
    return {f"{item['kind']}/{item['metadata']['name']}" for item in items}


def test_install_upgrade_and_uninstall_keep_every_podgroup_and_workload(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, tmp_path: Path
) -> None:
    before = make_gang_objects(kubectl, namespace)
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(VALUES))
    on_cluster = ("-n", namespace, "-f", str(values))
    kubeconfig = kubectl.kubeconfig
    rendered = helm.template(release=RELEASE, namespace=namespace)
    objects = {f"{d['kind']}/{d['metadata']['name']}" for d in documents(rendered)}
    crds = {name.replace("crd/", "CustomResourceDefinition/") for name in CRDS}
    try:
        told = helm.helm("install", RELEASE, str(helm.CHART), *on_cluster, kubeconfig=kubeconfig)
        assert installed(kubectl, rendered) == objects
        # NOTES.txt: what to do next, and what uninstalling leaves.
        assert "kubectl get podgroups" in told and "leaves the CRDs" in told, told
        assert "Deployment/e2e-muster-operator" in objects

        helm.helm(
            "upgrade", RELEASE, str(helm.CHART), *on_cluster, *helm.sets(CHANGED),
            kubeconfig=kubeconfig,
        )  # fmt: skip
        deployment = kubectl.json("get", "deployment", "e2e-muster-operator", "-n", namespace)
        assert deployment["spec"]["replicas"] == 3
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        env = {item["name"]: item.get("value") for item in container["env"]}
        assert (env["MUSTER_RELEASE_TIMEOUT"], env["MUSTER_LOG_LEVEL"]) == ("90", "debug")
        assert gang_objects(kubectl, namespace) == before
    finally:
        helm.helm("uninstall", RELEASE, "-n", namespace, "--wait", kubeconfig=kubeconfig)

    wait_until("the release's objects to go", lambda: installed(kubectl, rendered) == crds)
    assert gang_objects(kubectl, namespace) == before
    # No webhook of the release refuses anything any more (the API server drops a
    # deleted configuration within a moment).
    after = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "after", "namespace": namespace},
        "spec": {"schedulingPolicy": {"basic": {}}},
    }
    wait_until(
        "a PodGroup to be admitted again",
        lambda: kubectl("apply", "-f", "-", input=json.dumps(after), check=False).returncode == 0,
    )
