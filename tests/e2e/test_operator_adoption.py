"""Adopted PodGroups on the real control plane (docs/frameworks.md).

The PodGroup CRDs are the real ones: scheduler-plugins' from its Go module, Volcano's
generated from the types of its API module (`hack/build.sh --adopted-crds-only`). No
Volcano or coscheduling scheduler runs. The tests create PodGroups and pods the way
the frameworks do (KubeRay and the training-operator create the PodGroup first,
Trainer v2 in either order; members name their group by the API's label or
annotation and name its scheduler) under the partial-gang observer, which sees them
as gangs by the Muster label the webhook gives them.

The session's operator adopts nothing; the first test checks that nothing of theirs
is touched then. The others run it as installed with the chart's `adoption` values
(`adopting`), and restore the default installation after them. Some run real
frameworks: KubeRay's ray-operator, built from its module (`hack/build.sh
--kuberay-only`), in volcano mode and then in scheduler-plugins mode, and the Kubeflow
training-operator (`hack/build.sh --training-operator-only`) in both modes.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hack import cluster, installed

from muster.api.adoption import ADOPT_NAMESPACE_LABEL, SCHEDULER_PLUGINS, VOLCANO, AdoptedApi
from tests.e2e.cluster import Kubectl, wait_until
from tests.e2e.harness import (
    GPU,
    GROUP_LABEL,
    NodePool,
    OperatorProcess,
    admissions_for,
    events_for,
    explained,
    free_port,
    is_gated,
    pod_group,
    simulated,
    wait_all_bound,
    wait_for_reason,
)

ADOPTION_VALUES = ("adoption.apis={scheduler-plugins,volcano}",)
RESOURCES = {
    VOLCANO: "podgroups.scheduling.volcano.sh",
    SCHEDULER_PLUGINS: "podgroups.scheduling.x-k8s.io",
}


def adopted_crds() -> list[Path]:
    """The two CRD files, built into the cache on first use."""
    subprocess.run([str(cluster.HACK / "build.sh"), "--adopted-crds-only"], check=True)
    pinned = cluster.versions()
    directory = (
        cluster.cache_dir()
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


@dataclass
class RayOperator:
    """KubeRay's ray-operator, built from its module, as a local process in one batch
    scheduler mode at a time (two would both reconcile every RayCluster)."""

    binary: Path
    kubeconfig: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self, mode: str) -> None:
        self.stop()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    str(self.binary),
                    f"--batch-scheduler={mode}",
                    "--enable-leader-election=false",
                    "--metrics-addr=0",
                    f"--health-probe-bind-address=127.0.0.1:{free_port()}",
                ],
                env={**os.environ, "KUBECONFIG": str(self.kubeconfig)},
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=15)
            self.process = None


@pytest.fixture(scope="module")
def kuberay(
    kubectl: Kubectl, kubeconfig: Path, crds: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RayOperator]:
    """KubeRay's ray-operator with its CRDs, in volcano mode to begin with, for the module."""
    subprocess.run([str(cluster.HACK / "build.sh"), "--kuberay-only"], check=True)
    directory = cluster.cache_dir() / "kuberay" / cluster.versions()["KUBERAY_VERSION"]
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
class TrainingOperator:
    """The Kubeflow training-operator, built from its module, as a local process, for
    PyTorchJobs, in one gang scheduler mode at a time."""

    binary: Path
    kubeconfig: Path
    certs: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self, gang_scheduler_name: str) -> None:
        self.stop()
        # Its certificate directory is fixed under /tmp: a private /tmp keeps it its own.
        script = (
            "mount -t tmpfs tmpfs /tmp && mkdir -p /tmp/k8s-webhook-server/serving-certs"
            f" && cp {self.certs}/tls.crt {self.certs}/tls.key"
            ' /tmp/k8s-webhook-server/serving-certs/ && exec "$0" "$@"'
        )
        command = [
            *("unshare", "-m", "sh", "-c", script, str(self.binary)),
            f"--gang-scheduler-name={gang_scheduler_name}",
            "--enable-scheme=pytorchjob",
            "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{free_port()}",
            f"--webhook-server-port={free_port()}",
        ]
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "MY_POD_NAMESPACE": TRAINING_NAMESPACE,
        }
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=15)
            self.process = None


@pytest.fixture(scope="module")
def training_operator(
    kubectl: Kubectl, kubeconfig: Path, crds: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TrainingOperator]:
    """The training-operator with its PyTorchJob CRD, in volcano mode to begin with, for
    the module; its webhook's certificates prepared as its deployment has them."""
    subprocess.run([str(cluster.HACK / "build.sh"), "--training-operator-only"], check=True)
    pinned = cluster.versions()["TRAINING_OPERATOR_VERSION"]
    directory = cluster.cache_dir() / "training-operator" / pinned
    crd = directory / "crds" / "kubeflow.org_pytorchjobs.yaml"
    kubectl("apply", "--server-side", "-f", str(crd))
    established(kubectl, "pytorchjobs.kubeflow.org")
    certs = training_operator_certs(kubectl, kubeconfig.parent / "training-operator-certs")
    log_path = tmp_path_factory.mktemp("training-operator") / "training-operator.log"
    operator = TrainingOperator(
        directory / "bin" / "training-operator.v1", kubeconfig, certs, log_path
    )
    operator.start("volcano")
    try:
        yield operator
    finally:
        operator.stop()


TRAINING_NAMESPACE = "training-operator"


def training_operator_certs(kubectl: Kubectl, directory: Path) -> Path:
    """A CA and a serving certificate in the Secret the operator's cert rotator keeps,
    and the validating webhook configuration it injects the CA into (it waits for that
    before it starts its controllers); the webhook matches nothing here."""
    directory.mkdir(parents=True, exist_ok=True)
    name = f"training-operator.{TRAINING_NAMESPACE}.svc"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "3650",
            "-subj",
            "/O=training-operator/CN=training-operator-ca",
            "-keyout",
            str(directory / "ca.key"),
            "-out",
            str(directory / "ca.crt"),
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "3650",
            "-subj",
            f"/CN={name}",
            "-addext",
            f"subjectAltName=DNS:{name}",
            "-addext",
            "extendedKeyUsage=serverAuth",
            "-CA",
            str(directory / "ca.crt"),
            "-CAkey",
            str(directory / "ca.key"),
            "-keyout",
            str(directory / "tls.key"),
            "-out",
            str(directory / "tls.crt"),
        ],
        check=True,
        capture_output=True,
    )
    for key in ("ca.key", "tls.key"):  # PKCS#1, the form the rotator parses
        path = str(directory / key)
        subprocess.run(
            ["openssl", "rsa", "-traditional", "-in", path, "-out", path],
            check=True,
            capture_output=True,
        )
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


def pytorch_job(name: str, pool: NodePool, *, workers: int) -> dict[str, Any]:
    """A PyTorchJob of a master and `workers` workers of a whole node's GPUs each."""

    def replicas(count: int) -> dict[str, Any]:
        container = {
            "name": "pytorch",
            "image": "pytorch/pytorch:2.4.0",
            "resources": {"limits": {GPU: "8"}},
        }
        template = {
            "spec": {
                "tolerations": [pool.toleration],
                "nodeSelector": pool.selector,
                "containers": [container],
            }
        }
        return {"replicas": count, "restartPolicy": "OnFailure", "template": template}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": {"Master": replicas(1), "Worker": replicas(workers)}},
    }


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


def test_with_adoption_off_nothing_of_theirs_is_touched(
    operator: OperatorProcess, crds: None, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    adopt(kubectl, namespace)
    pool.add(gpus=8)
    kubectl.apply(foreign_group(VOLCANO, "ray-a-pg", 1), namespace)
    kubectl.apply(member(VOLCANO, "ray-a-pg", "ray-a-0", pool), namespace)
    pod = kubectl.json("get", "pod", "ray-a-0", "-n", namespace)
    assert pod["spec"]["schedulerName"] == "volcano"
    assert GROUP_LABEL not in (pod["metadata"].get("labels") or {})
    assert not is_gated(pod)
    found = kubectl("get", "podgroups.scheduling.muster.dev", "-n", namespace, "-o", "name")
    assert found.stdout.strip() == ""
    assert foreign_status(kubectl, VOLCANO, namespace, "ray-a-pg") == {}


@pytest.mark.parametrize("api", [VOLCANO, SCHEDULER_PLUGINS], ids=lambda api: api.name)
def test_an_adopted_gang_starts_whole_and_its_status_is_told(
    api: AdoptedApi, adopting: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    adopt(kubectl, namespace)
    for _ in range(4):
        pool.add(gpus=8)
    kubectl.apply(foreign_group(api, "ray-a", 4), namespace)
    create_gang(kubectl, namespace, pool, api, name="ray-a", size=4)
    pods = wait_all_bound(kubectl, namespace, "ray-a", 4)
    assert {pod["spec"]["schedulerName"] for pod in pods} == {"default-scheduler"}
    assert len({pod["spec"]["nodeName"] for pod in pods}) == 4
    made = pod_group(kubectl, namespace, "ray-a")
    assert made["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    [owner] = made["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["name"]) == (api.api_version, "ray-a")
    status = wait_for_phase(kubectl, api, namespace, "ray-a", "Running")
    assert status["running"] == 4
    # The decisions were the engine's: its trace replays to the same ones.
    assert admissions_for(adopting.replayed(), namespace, "ray-a")


@pytest.mark.parametrize("api", [VOLCANO, SCHEDULER_PLUGINS], ids=lambda api: api.name)
def test_pods_created_before_their_group_wait_for_it(
    api: AdoptedApi, adopting: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    adopt(kubectl, namespace)
    for _ in range(3):
        pool.add(gpus=8)
    create_gang(kubectl, namespace, pool, api, name="trainer", size=3)
    pods = [kubectl.json("get", "pod", f"trainer-{index}", "-n", namespace) for index in range(3)]
    assert all(is_gated(pod) and not pod["spec"].get("nodeName") for pod in pods)
    kubectl.apply(foreign_group(api, "trainer", 3), namespace)
    wait_all_bound(kubectl, namespace, "trainer", 3)


def test_a_gang_that_does_not_fit_waits_whole_with_muster_s_reason(
    adopting: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    adopt(kubectl, namespace)
    for _ in range(2):
        pool.add(gpus=8)
    big = foreign_group(VOLCANO, "ray-big-pg", 3)
    big["spec"]["minResources"] = {GPU: "100000"}  # more than any test cluster holds
    kubectl.apply(big, namespace)
    status = wait_for_phase(kubectl, VOLCANO, namespace, "ray-big-pg", "Inqueue")
    create_gang(kubectl, namespace, pool, VOLCANO, name="ray-big-pg", size=3)
    condition = wait_for_reason(kubectl, namespace, "ray-big-pg", "Unschedulable")
    wait_until(
        "Muster's reason on the Volcano PodGroup",
        lambda: (
            (foreign_status(kubectl, VOLCANO, namespace, "ray-big-pg").get("conditions") or [{}])[
                0
            ].get("message")
            == condition["message"]
        ),
    )
    status = foreign_status(kubectl, VOLCANO, namespace, "ray-big-pg")
    assert status["phase"] == "Inqueue"  # never back to Pending once it left it
    assert status["conditions"][0]["type"] == "Unschedulable"
    pods = [
        kubectl.json("get", "pod", f"ray-big-pg-{index}", "-n", namespace) for index in range(3)
    ]
    assert all(is_gated(pod) and not pod["spec"].get("nodeName") for pod in pods)
    # The adopted gang is a gang like any other to explain and simulate.
    assert condition["message"] in explained(adopting, namespace, "ray-big-pg")
    assert simulated(kubectl, namespace, "ray-big-pg")["scheduled"] is False
    # Its minResources is beyond the cluster: told, advisory only (judged by its pods).
    wait_until(
        "the minResources precheck on the Volcano PodGroup",
        lambda: any(
            event["reason"] == "MinResourcesBeyondCluster"
            and event["involvedObject"]["apiVersion"] == VOLCANO.api_version
            and GPU in event["message"]
            for event in events_for(kubectl, namespace, "ray-big-pg")
        ),
    )


def test_members_beyond_min_member_join_once_the_gang_is_bound(
    adopting: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    adopt(kubectl, namespace)
    for _ in range(3):
        pool.add(gpus=8)
    kubectl.apply(foreign_group(VOLCANO, "ray-c-pg", 2), namespace)
    create_gang(kubectl, namespace, pool, VOLCANO, name="ray-c-pg", size=2)
    wait_all_bound(kubectl, namespace, "ray-c-pg", 2)
    # An autoscaled worker, or a RayJob's submitter: beyond minMember.
    kubectl.apply(member(VOLCANO, "ray-c-pg", "ray-c-pg-2", pool), namespace)
    wait_all_bound(kubectl, namespace, "ray-c-pg", 3)
    assert pod_group(kubectl, namespace, "ray-c-pg")["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 2}
    }


def test_adoption_refuses_to_start_beside_a_running_adopted_scheduler(
    adopting: OperatorProcess, kubectl: Kubectl, namespace: str
) -> None:
    """A bind Volcano reported (as its scheduler reports them) keeps adoption from
    starting; the replica exits saying so."""
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "bound-by-volcano"},
        "involvedObject": {"kind": "Pod", "name": "somewhere", "namespace": namespace},
        "reason": "Scheduled",
        "message": "Successfully assigned somewhere to node-1",
        "source": {"component": "volcano"},
        "type": "Normal",
    }
    kubectl.apply(event, namespace)
    replica = adopting.replica("refused", "--adopt=volcano")
    try:
        with pytest.raises(AssertionError, match="the scheduler volcano binds pods"):
            replica.start()
        assert replica.process is not None and replica.process.wait(timeout=10) == 3
    finally:
        kubectl("delete", "event", "bound-by-volcano", "-n", namespace)
        replica.stop()


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


def test_outside_the_adopted_namespaces_nothing_is_touched_until_one_is_labelled(
    adopting: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=8)
    kubectl.apply(foreign_group(VOLCANO, "ray-a-pg", 1), namespace)
    kubectl.apply(member(VOLCANO, "ray-a-pg", "ray-a-0", pool), namespace)
    pod = kubectl.json("get", "pod", "ray-a-0", "-n", namespace)
    assert pod["spec"]["schedulerName"] == "volcano"
    assert not is_gated(pod)
    assert GROUP_LABEL not in (pod["metadata"].get("labels") or {})
    assert foreign_status(kubectl, VOLCANO, namespace, "ray-a-pg") == {}
    # Labelled, the namespace is adopted from then on: the PodGroup was seen and left.
    adopt(kubectl, namespace)
    wait_until(
        "the adopted PodGroup's Muster PodGroup",
        lambda: (
            kubectl(
                "get", "podgroups.scheduling.muster.dev", "ray-a-pg", "-n", namespace, check=False
            ).returncode
            == 0
        ),
    )


def test_a_pytorch_job_in_volcano_mode_starts_whole_once_muster_set_inqueue(
    adopting: OperatorProcess,
    training_operator: TrainingOperator,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    for _ in range(4):
        pool.add(gpus=8)
    # Not adopted yet: the training-operator makes the PodGroup and waits for Inqueue.
    kubectl.apply(pytorch_job("torch", pool, workers=3), namespace)
    wait_until(
        "the training-operator's Volcano PodGroup",
        lambda: (
            kubectl("get", RESOURCES[VOLCANO], "torch", "-n", namespace, check=False).returncode
            == 0
        ),
        timeout=120,
    )
    assert foreign_status(kubectl, VOLCANO, namespace, "torch").get("phase") in (None, "Pending")
    assert kubectl.json("get", "pods", "-n", namespace)["items"] == []
    adopt(kubectl, namespace)
    pods = wait_all_bound(kubectl, namespace, "torch", 4, timeout=120)
    assert {pod["spec"]["schedulerName"] for pod in pods} == {"default-scheduler"}
    assert len({pod["spec"]["nodeName"] for pod in pods}) == 4
    assert pod_group(kubectl, namespace, "torch")["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 4}
    }
    wait_for_phase(kubectl, VOLCANO, namespace, "torch", "Running")


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
    kubectl.apply(pytorch_job("torch", pool, workers=3), namespace)
    pods = wait_all_bound(kubectl, namespace, "torch", 4, timeout=120)
    assert {pod["spec"]["schedulerName"] for pod in pods} == {"default-scheduler"}
    assert all(pod["metadata"]["labels"][SCHEDULER_PLUGINS.member_label] == "torch" for pod in pods)
    owner = pod_group(kubectl, namespace, "torch")["metadata"]["ownerReferences"][0]
    assert owner["apiVersion"] == SCHEDULER_PLUGINS.api_version
    wait_for_phase(kubectl, SCHEDULER_PLUGINS, namespace, "torch", "Running")
