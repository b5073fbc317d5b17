"""Real frameworks' gangs adopted on the real control plane (docs/frameworks.md):
KubeRay's ray-operator, built from its module (`hack/build.sh --kuberay-only`), in
volcano mode and then in scheduler-plugins mode, and the Kubeflow training-operator
(`hack/build.sh --training-operator-only`) in both modes (PyTorchJobs in both, TFJobs
in volcano mode), under the partial-gang observer, with the operator as installed
with adoption on (`adopting`).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from devtools import builds
from devtools.cluster import pki
from devtools.factories import GPU, NodePool
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.ports import free_port
from devtools.waiting import wait_until

from muster.api.adoption import SCHEDULER_PLUGINS, VOLCANO
from tests.e2e.support.adoption import (
    RESOURCES,
    adopt,
    established,
    foreign_status,
    wait_for_phase,
)
from tests.e2e.support.harness import (
    GROUP_LABEL,
    is_gated,
    pod_group,
    wait_all_bound,
    wait_for_reason,
)


@dataclass
class LocalController:
    """A framework's controller, built from its module, run as a local process with a
    kubeconfig (one mode at a time: two would both reconcile every object)."""

    binary: Path
    kubeconfig: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def spawn(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.stop()
        environment = {**os.environ, "KUBECONFIG": str(self.kubeconfig), **(env or {})}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                command, env=environment, stdout=log, stderr=subprocess.STDOUT
            )

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=15)
            self.process = None


class RayOperator(LocalController):
    """KubeRay's ray-operator, in one batch scheduler mode at a time."""

    def start(self, mode: str) -> None:
        self.spawn(
            [
                str(self.binary),
                f"--batch-scheduler={mode}",
                "--enable-leader-election=false",
                "--metrics-addr=0",
                f"--health-probe-bind-address=127.0.0.1:{free_port()}",
            ]
        )


@pytest.fixture(scope="module")
def kuberay(
    kubectl: Kubectl, kubeconfig: Path, crds: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RayOperator]:
    """KubeRay's ray-operator with its CRDs, in volcano mode to begin with, for the module."""
    subprocess.run([str(builds.HACK / "build.sh"), "--kuberay-only"], check=True)
    directory = builds.cache_dir() / "kuberay" / builds.versions()["KUBERAY_VERSION"]
    kubectl("apply", "--server-side", "-f", str(directory / "crds"))
    established(kubectl, "rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io")
    log_path = tmp_path_factory.mktemp("kuberay") / "ray-operator.log"
    operator = RayOperator(directory / "bin" / "ray-operator", kubeconfig, log_path)
    operator.start("volcano")
    try:
        yield operator
    finally:
        operator.stop()


@dataclass
class TrainingOperator(LocalController):
    """The Kubeflow training-operator, for PyTorchJobs and TFJobs, in one gang scheduler
    mode at a time; `certs` holds its webhook's serving certificate."""

    certs: Path = Path()

    def start(self, gang_scheduler_name: str) -> None:
        # Its certificate directory is fixed under /tmp: a private mount there keeps it
        # its own (and the rest of /tmp, where a checkout may live, in sight).
        script = (
            f"mkdir -p {WEBHOOK_CERTS} && mount -t tmpfs tmpfs {WEBHOOK_CERTS}"
            f" && mkdir -p {WEBHOOK_CERTS}/serving-certs"
            f" && cp {self.certs}/tls.crt {self.certs}/tls.key {WEBHOOK_CERTS}/serving-certs/"
            ' && exec "$0" "$@"'
        )
        command = [
            *("unshare", "-m", "sh", "-c", script, str(self.binary)),
            f"--gang-scheduler-name={gang_scheduler_name}",
            *(f"--enable-scheme={kind.scheme}" for kind in TRAINING_JOB_KINDS),
            "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{free_port()}",
            f"--webhook-server-port={free_port()}",
        ]
        self.spawn(command, {"MY_POD_NAMESPACE": TRAINING_NAMESPACE})


@pytest.fixture(scope="module")
def training_operator(
    kubectl: Kubectl, kubeconfig: Path, crds: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TrainingOperator]:
    """The training-operator with the CRDs of the kinds the tests run, in volcano mode to
    begin with, for the module; its webhook's certificates prepared as its deployment
    has them."""
    subprocess.run([str(builds.HACK / "build.sh"), "--training-operator-only"], check=True)
    pinned = builds.versions()["TRAINING_OPERATOR_VERSION"]
    directory = builds.cache_dir() / "training-operator" / pinned
    for kind in TRAINING_JOB_KINDS:
        crd = directory / "crds" / f"kubeflow.org_{kind.scheme}s.yaml"
        kubectl("apply", "--server-side", "-f", str(crd))
    established(kubectl, *(f"{kind.scheme}s.kubeflow.org" for kind in TRAINING_JOB_KINDS))
    certs = training_operator_certs(kubectl, kubeconfig.parent / "training-operator-certs")
    log_path = tmp_path_factory.mktemp("training-operator") / "training-operator.log"
    binary = directory / "bin" / "training-operator.v1"
    operator = TrainingOperator(binary, kubeconfig, log_path, certs=certs)
    operator.start("volcano")
    try:
        yield operator
    finally:
        operator.stop()


TRAINING_NAMESPACE = "training-operator"
WEBHOOK_CERTS = "/tmp/k8s-webhook-server"  # where the training-operator reads its certificate


def training_operator_certs(kubectl: Kubectl, directory: Path) -> Path:
    """A CA and a serving certificate in the Secret the operator's cert rotator keeps,
    and the validating webhook configuration it injects the CA into (it waits for that
    before it starts its controllers); the webhook matches nothing here."""
    directory.mkdir(parents=True, exist_ok=True)
    name = f"training-operator.{TRAINING_NAMESPACE}.svc"
    # PKCS#1 keys, the form its rotator parses
    pki.make_ca(directory, "/O=training-operator/CN=training-operator-ca")
    pki.issue_serving_cert(directory, f"/CN={name}", f"DNS:{name}")
    kubectl("create", "namespace", TRAINING_NAMESPACE, check=False)
    kubectl(
        "create",
        "secret",
        "generic",
        "training-operator-webhook-cert",
        "-n",
        TRAINING_NAMESPACE,
        *(
            f"--from-file={key}={directory / key}"
            for key in ("ca.crt", "ca.key", "tls.crt", "tls.key")
        ),
        check=False,
    )
    webhook = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "validator.training-operator.kubeflow.org"},
        "webhooks": [
            {
                "name": "validator.pytorchjob.training-operator.kubeflow.org",
                "clientConfig": {"url": "https://127.0.0.1:1/unused"},
                "rules": [
                    {
                        "apiGroups": ["kubeflow.org"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["unused"],
                    }
                ],
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }
        ],
    }
    kubectl.apply(webhook)
    return directory


@dataclass(frozen=True)
class TrainingJobKind:
    """A kind of the training-operator's jobs: its replica specs' field, its container's
    name and image, and the replicas of the small job the tests run (four in all)."""

    kind: str
    scheme: str
    specs: str
    container: str
    image: str
    replicas: dict[str, int]

    def job(self, name: str, pool: NodePool) -> dict[str, Any]:
        """A job of the kind whose every replica takes a whole node's GPUs."""
        container = {
            "name": self.container,
            "image": self.image,
            "resources": {"limits": {GPU: "8"}},
        }
        template = {
            "spec": {
                "tolerations": [pool.toleration],
                "nodeSelector": pool.selector,
                "containers": [container],
            }
        }
        return {
            "apiVersion": "kubeflow.org/v1",
            "kind": self.kind,
            "metadata": {"name": name},
            "spec": {
                self.specs: {
                    replica: {"replicas": count, "restartPolicy": "OnFailure", "template": template}
                    for replica, count in self.replicas.items()
                }
            },
        }


PYTORCH_JOB = TrainingJobKind(
    "PyTorchJob",
    "pytorchjob",
    "pytorchReplicaSpecs",
    "pytorch",
    "pytorch/pytorch:2.4.0",
    {"Master": 1, "Worker": 3},
)
TF_JOB = TrainingJobKind(
    "TFJob",
    "tfjob",
    "tfReplicaSpecs",
    "tensorflow",
    "tensorflow/tensorflow:2.16.1",
    {"Chief": 1, "PS": 1, "Worker": 2},
)
TRAINING_JOB_KINDS = (PYTORCH_JOB, TF_JOB)


def ray_cluster(name: str, pool: NodePool, *, workers: int) -> dict[str, Any]:
    """A RayCluster of a head and `workers` workers of a whole node's GPUs each."""

    def template(container: str, limits: dict[str, str]) -> dict[str, Any]:
        return {
            "spec": {
                "tolerations": [pool.toleration],
                "nodeSelector": pool.selector,
                "containers": [
                    {
                        "name": container,
                        "image": "rayproject/ray:2.46.0",
                        "resources": {"limits": limits},
                    }
                ],
            }
        }

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": template("ray-head", {"cpu": "1"})},
            "workerGroupSpecs": [
                {
                    "groupName": "gpu",
                    "replicas": workers,
                    "minReplicas": workers,
                    "maxReplicas": workers,
                    "rayStartParams": {},
                    "template": template("ray-worker", {"cpu": "1", GPU: "8"}),
                }
            ],
        },
    }


def test_a_kuberay_cluster_in_volcano_mode_starts_whole_and_a_second_waits_whole(
    adopting: OperatorProcess,
    kuberay: RayOperator,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    adopt(kubectl, namespace)
    for _ in range(3):
        pool.add(gpus=8)
    kubectl.apply(ray_cluster("first", pool, workers=3), namespace)
    pods = wait_all_bound(kubectl, namespace, "ray-first-pg", 4, timeout=120)
    assert {pod["spec"]["schedulerName"] for pod in pods} == {"default-scheduler"}
    assert pod_group(kubectl, namespace, "ray-first-pg")["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 4}
    }
    wait_for_phase(kubectl, VOLCANO, namespace, "ray-first-pg", "Running")
    kubectl.apply(ray_cluster("second", pool, workers=3), namespace)
    condition = wait_for_reason(kubectl, namespace, "ray-second-pg", "Unschedulable", timeout=120)
    assert "gpu" in condition["message"]
    second = [
        pod
        for pod in kubectl.json("get", "pods", "-n", namespace)["items"]
        if pod["metadata"].get("labels", {}).get(GROUP_LABEL) == "ray-second-pg"
    ]
    assert len(second) == 4
    assert all(is_gated(pod) and not pod["spec"].get("nodeName") for pod in second)


def test_a_kuberay_job_s_cluster_starts_whole_and_its_submitter_runs(
    adopting: OperatorProcess,
    kuberay: RayOperator,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    adopt(kubectl, namespace)
    for _ in range(2):
        pool.add(gpus=8)
    cluster_spec = ray_cluster("unused", pool, workers=2)["spec"]
    submitter = {
        "spec": {
            "restartPolicy": "Never",
            "tolerations": [pool.toleration],
            "nodeSelector": pool.selector,
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": "rayproject/ray:2.46.0",
                    "resources": {"limits": {"cpu": "1"}},
                }
            ],
        }
    }
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "job"},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "rayClusterSpec": cluster_spec,
            "submitterPodTemplate": submitter,
        },
    }
    kubectl.apply(job, namespace)
    # The head and two workers start whole (the observer holds them to it); the
    # submitter, which KubeRay leaves out of minMember and creates once the cluster is
    # up, joins the bound gang.
    pods = wait_all_bound(kubectl, namespace, "ray-job-pg", 4, timeout=120)
    assert pod_group(kubectl, namespace, "ray-job-pg")["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 3}
    }
    submitters = [
        pod
        for pod in pods
        if any(owner["kind"] == "Job" for owner in pod["metadata"].get("ownerReferences") or [])
    ]
    assert len(submitters) == 1
    assert submitters[0]["spec"]["schedulerName"] == "default-scheduler"


def test_a_labelled_kuberay_cluster_in_scheduler_plugins_mode_starts_whole(
    adopting: OperatorProcess,
    kuberay: RayOperator,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    kuberay.start("scheduler-plugins")
    adopt(kubectl, namespace)
    for _ in range(3):
        pool.add(gpus=8)
    labelled = ray_cluster("coscheduled", pool, workers=3)
    labelled["metadata"]["labels"] = {"ray.io/gang-scheduling-enabled": "true"}
    kubectl.apply(labelled, namespace)
    pods = wait_all_bound(kubectl, namespace, "coscheduled", 4, timeout=120)
    assert {pod["spec"]["schedulerName"] for pod in pods} == {"default-scheduler"}
    owner = pod_group(kubectl, namespace, "coscheduled")["metadata"]["ownerReferences"][0]
    assert owner["apiVersion"] == SCHEDULER_PLUGINS.api_version
    wait_for_phase(kubectl, SCHEDULER_PLUGINS, namespace, "coscheduled", "Running")


@pytest.mark.usefixtures("adopting", "training_operator")
@pytest.mark.parametrize("kind", TRAINING_JOB_KINDS, ids=lambda kind: kind.kind)
def test_a_training_job_in_volcano_mode_starts_whole_once_muster_set_inqueue(
    kind: TrainingJobKind,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    """The training-operator runs every kind through the same PodGroup code: a
    PyTorchJob's master and three workers, a TFJob's chief, parameter server and two
    workers."""
    name = kind.container
    for _ in range(4):
        pool.add(gpus=8)
    # Not adopted yet: the training-operator makes the PodGroup and waits for Inqueue.
    kubectl.apply(kind.job(name, pool), namespace)
    wait_until(
        "the training-operator's Volcano PodGroup",
        lambda: (
            kubectl("get", RESOURCES[VOLCANO], name, "-n", namespace, check=False).returncode == 0
        ),
        timeout=120,
    )
    assert foreign_status(kubectl, VOLCANO, namespace, name).get("phase") in (None, "Pending")
    assert kubectl.json("get", "pods", "-n", namespace)["items"] == []
    adopt(kubectl, namespace)
    pods = wait_all_bound(kubectl, namespace, name, 4, timeout=120)
    assert {pod["spec"]["schedulerName"] for pod in pods} == {"default-scheduler"}
    assert len({pod["spec"]["nodeName"] for pod in pods}) == 4
    assert pod_group(kubectl, namespace, name)["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 4}
    }
    wait_for_phase(kubectl, VOLCANO, namespace, name, "Running")


def test_a_pytorch_job_in_scheduler_plugins_mode_starts_whole(
    adopting: OperatorProcess,
    training_operator: TrainingOperator,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    training_operator.start("scheduler-plugins-scheduler")
    adopt(kubectl, namespace)
    for _ in range(4):
        pool.add(gpus=8)
    kubectl.apply(PYTORCH_JOB.job("torch", pool), namespace)
    pods = wait_all_bound(kubectl, namespace, "torch", 4, timeout=120)
    assert {pod["spec"]["schedulerName"] for pod in pods} == {"default-scheduler"}
    assert all(pod["metadata"]["labels"][SCHEDULER_PLUGINS.member_label] == "torch" for pod in pods)
    owner = pod_group(kubectl, namespace, "torch")["metadata"]["ownerReferences"][0]
    assert owner["apiVersion"] == SCHEDULER_PLUGINS.api_version
    wait_for_phase(kubectl, SCHEDULER_PLUGINS, namespace, "torch", "Running")
