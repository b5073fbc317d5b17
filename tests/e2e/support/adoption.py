"""What the adoption e2e tests share: the adopted APIs' real CRDs, the operator as the
chart installs it with adoption on, and PodGroups and pods made the way the
frameworks make them (docs/frameworks.md)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from devtools import builds, installed
from devtools.factories import GPU, NodePool
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.api.adoption import ADOPT_NAMESPACE_LABEL, SCHEDULER_PLUGINS, VOLCANO, AdoptedApi

ADOPTION_VALUES = ("adoption.apis={scheduler-plugins,volcano}",)
RESOURCES = {
    VOLCANO: "podgroups.scheduling.volcano.sh",
    SCHEDULER_PLUGINS: "podgroups.scheduling.x-k8s.io",
}


def adopted_crds() -> list[Path]:
    """The two CRD files, built into the cache on first use."""
    subprocess.run([str(builds.HACK / "build.sh"), "--adopted-crds-only"], check=True)
    pinned = builds.versions()
    directory = (
        builds.cache_dir()
        / "adopted-crds"
        / f"{pinned['SCHEDULER_PLUGINS_VERSION']}-{pinned['VOLCANO_APIS_VERSION']}"
    )
    return [
        directory / "scheduling.x-k8s.io_podgroups.yaml",
        directory / "scheduling.volcano.sh_podgroups.yaml",
    ]


def established(kubectl: Kubectl, *names: str) -> None:
    """Wait until the CRDs are served (one just created has no conditions to wait on)."""
    crds = [f"crd/{name}" for name in names]

    def served() -> bool:
        waited = kubectl("wait", "--for=condition=Established", *crds, check=False)
        return waited.returncode == 0

    wait_until(f"the CRDs {', '.join(names)} to be established", served)


@pytest.fixture(scope="module")
def crds(kubectl: Kubectl) -> None:
    for path in adopted_crds():
        kubectl("apply", "--server-side", "-f", str(path))
    established(kubectl, *RESOURCES.values())


@pytest.fixture(scope="module")
def adopting(operator: OperatorProcess, kubeconfig: Path, crds: None) -> Iterator[OperatorProcess]:
    """The operator as the chart installs it with adoption on, for the module."""
    service = operator.service
    defaults = service.settings
    service.settings = installed.install(kubeconfig, service.url, ADOPTION_VALUES)
    assert service.settings["MUSTER_ADOPT"] == "scheduler-plugins,volcano"
    operator.restart()
    try:
        yield operator
    finally:
        service.settings = defaults
        installed.install(kubeconfig, service.url)
        operator.restart()


def adopt(kubectl: Kubectl, namespace: str) -> None:
    kubectl("label", "namespace", namespace, f"{ADOPT_NAMESPACE_LABEL}=true")


def foreign_group(api: AdoptedApi, name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": api.api_version,
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member},
    }


def member(api: AdoptedApi, group: str, name: str, pool: NodePool) -> dict[str, Any]:
    """A pod as the frameworks make it: its group by the API's word, its scheduler
    named, a whole node's GPUs."""
    metadata: dict[str, Any] = {"name": name}
    if api.member_label is not None:
        metadata["labels"] = {api.member_label: group}
    else:
        metadata["annotations"] = {str(api.member_annotation): group}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": api.scheduler_name,
            "tolerations": [pool.toleration],
            "nodeSelector": pool.selector,
            "containers": [
                {"name": "worker", "image": "trainer", "resources": {"limits": {GPU: "8"}}}
            ],
        },
    }


def create_gang(
    kubectl: Kubectl, namespace: str, pool: NodePool, api: AdoptedApi, *, name: str, size: int
) -> None:
    for index in range(size):
        kubectl.apply(member(api, name, f"{name}-{index}", pool), namespace)


def foreign_status(kubectl: Kubectl, api: AdoptedApi, namespace: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = (
        kubectl.json("get", RESOURCES[api], name, "-n", namespace).get("status") or {}
    )
    return status


def wait_for_phase(
    kubectl: Kubectl, api: AdoptedApi, namespace: str, name: str, phase: str
) -> dict[str, Any]:
    wait_until(
        f"{api.name} PodGroup {name} to be {phase}",
        lambda: foreign_status(kubectl, api, namespace, name).get("phase") == phase,
        timeout=60,
    )
    return foreign_status(kubectl, api, namespace, name)
