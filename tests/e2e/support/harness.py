"""The operator under test: `muster run` as a real process, installed as users install it.

The `operator` fixture applies the rendered manifests (`hack/installed.py`: the CRDs,
the ServiceAccount `muster-system/muster-operator` with exactly the manifests' RBAC,
the pod-rights policy that judges it, the webhook configurations), then starts
`muster run` with the Deployment's settings, authenticated by a token of that
ServiceAccount, and stops it at the end of the session. Where the manifests name the
Service, the webhook configurations call a stand-in on 127.0.0.1 that forwards each
connection to a ready replica, as the Service's endpoints would. A test may kill the
operator with SIGKILL and start it again to check restart safety, or start a second
replica. The session's operator records its trace, which a test may replay
(`OperatorProcess.replayed`). A replica runs from the image instead when given one
(`OperatorProcess.image`); a test marked `process_and_image` runs a second time with
every replica so (tests/e2e/support/image.py).

Helpers build what the scenarios need: simulated GPU nodes of their own (tainted and
labelled for one test, so no other test's pods land there) and gang Jobs that
tolerate and select exactly those nodes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hack import container, installed

from muster.api.gates import has_gang_gate
from muster.simulation.replay import ReplayedCycle, first_difference, read_trace, replay
from tests.e2e.support.cluster import ROOT, Kubectl, wait_until

POOL_LABEL = "e2e.muster.dev/pool"
POLICY_LABEL = "scheduling.muster.dev/policy"
GROUP_LABEL = "scheduling.muster.dev/pod-group"
GPU = "nvidia.com/gpu"
# Fully qualified: an API server with native gang scheduling serves `podgroups` too.
POD_GROUPS = "podgroups.scheduling.muster.dev"
WORKLOADS = "workloads.scheduling.muster.dev"
LONG_RUNNING = "1h"
WEBHOOK_CONFIGURATION = installed.WEBHOOK_CONFIGURATION
LEASE = ("lease", "muster-operator", "-n", installed.NAMESPACE)
# What the e2e operator sets beyond the Deployment's settings, and why: a rolled-back
# gang is tried again after 2 s instead of 10, so the rollback tests take seconds.
TEST_FLAGS = ("--rollback-backoff=2",)
# Where a replica from the image has its trace's directory mounted.
TRACE_MOUNT = "/var/run/muster-trace"
# How long a replica stays among the Service's endpoints after its readiness was last
# seen true: the chart's readinessProbe takes it out after 2 failures 5 s apart.
READINESS_GRACE = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class OperatorProcess:
    """One `muster run` replica, as installed; its output goes to a log file kept for
    failures.

    `kubeconfig` is the cluster's admin kubeconfig (the tests' own); the replica
    authenticates with `service.credentials`, a token of the installed ServiceAccount,
    and takes the Deployment's settings from `service.settings`. With `image`, it runs
    from the image instead, with podman, as the Deployment runs its container
    (hack/container.py: a mounted token, no kubeconfig): `podman run` in the
    foreground is then its process, so its output goes to the log and SIGTERM reaches
    the operator (podman passes signals on).
    """

    service: WebhookService
    log_path: Path
    identity: str = "muster-e2e"
    flags: tuple[str, ...] = ()
    record_trace: bool = False  # --record-trace to `trace_path`, for `replayed`
    health_port: int = field(default_factory=free_port)
    webhook_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    ready_at: float | None = None  # when its readiness was last seen true
    image: container.ImageRun | None = None

    def __post_init__(self) -> None:
        self.service.replicas.append(self)

    @property
    def kubeconfig(self) -> Path:
        return self.service.kubeconfig

    def replica(self, identity: str, *flags: str) -> OperatorProcess:
        """Another replica of the same installation (a standby), not yet started."""
        return OperatorProcess(
            service=self.service,
            log_path=self.log_path.with_name(f"{identity}.log"),
            identity=identity,
            flags=flags,
            image=self.image,
        )

    @property
    def trace_path(self) -> Path:
        """Where the operator records its trace (`--record-trace`), afresh at each start:
        a directory of its own, which a replica from the image has mounted writable."""
        return self.log_path.with_name(f"{self.log_path.stem}.trace") / "trace.jsonl"

    @property
    def container_name(self) -> str:
        """Its container's name when run from the image: podman's names are the
        machine's, and ports are unique on it while the replica lives."""
        return f"muster-{self.identity}-{self.health_port}"

    @property
    def credentials(self) -> Path:
        """A kubeconfig that authenticates as the replica does: the token it was given,
        mounted or in `service.credentials`."""
        if self.image is None:
            return self.service.credentials
        token = (self.image.service_account / "token").read_text()
        path = self.log_path.with_suffix(".token.kubeconfig")
        return installed.token_kubeconfig(self.kubeconfig, token, path)

    def replayed(self) -> list[ReplayedCycle]:
        """Every cycle of the running operator so far, decided again from its trace; the
        replay's decisions must be the operator's, cycle for cycle."""
        assert self.record_trace, "this operator records no trace"
        cycles = replay(read_trace(self.trace_path))
        difference = first_difference(cycles)
        assert difference is None, difference
        return cycles

    def command(self, extra: tuple[str, ...]) -> list[str]:
        flags = (*TEST_FLAGS, *self.flags, *extra)
        if self.image is not None:
            return self.image_command(flags)
        return [
            sys.executable,
            "-c",
            "import sys; from muster.cli import main; sys.exit(main())",
            "run",
            f"--kubeconfig={self.service.credentials}",
            "--webhook-host=127.0.0.1",
            f"--webhook-port={self.webhook_port}",
            "--health-host=127.0.0.1",
            f"--health-port={self.health_port}",
            f"--identity={self.identity}",
            *([f"--record-trace={self.trace_path}"] if self.record_trace else []),
            *flags,
        ]

    def image_command(self, flags: tuple[str, ...]) -> list[str]:
        """`podman run` of the image with the addresses and identity in the environment
        (as the Deployment sets them), the trace's directory mounted writable."""
        assert self.image is not None
        environment = container.local_environment(
            self.kubeconfig,
            self.service.settings,
            webhook_port=self.webhook_port,
            health_port=self.health_port,
            identity=self.identity,
        )
        volumes = {}
        if self.record_trace:
            # The container's user writes there, as to an emptyDir, and makes the file
            # afresh: one a local process left it may not open.
            self.trace_path.parent.chmod(0o1777)
            self.trace_path.unlink(missing_ok=True)
            volumes[self.trace_path.parent] = TRACE_MOUNT
            flags = (f"--record-trace={TRACE_MOUNT}/{self.trace_path.name}", *flags)
        return self.image.command(
            name=self.container_name, environment=environment, volumes=volumes, arguments=flags
        )

    def start(self, *extra: str) -> None:
        if self.record_trace:
            self.trace_path.parent.mkdir(exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"\n=== start {' '.join(extra)} ===\n".encode())
            self.process = subprocess.Popen(
                self.command(extra),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env={**os.environ, **self.service.settings},
            )
        wait_until("the operator to be ready", self.ready, timeout=60)

    def ready(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(f"the operator exited:\n{self.log_tail()}")
        return self.serving()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def serving(self) -> bool:
        """Whether the replica is up and says it is ready (its readiness probe)."""
        if not self.running():
            return False
        try:
            with urllib.request.urlopen(self.url("/readyz"), timeout=2) as response:
                ready = bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False
        if ready:
            self.ready_at = time.monotonic()
        return ready

    def endpoint(self) -> bool:
        """Whether the Service would send a connection here: the process runs, and its
        readiness is true or was within READINESS_GRACE (a slow or briefly failing
        probe does not take an endpoint out at once; the replica itself answers a call
        it cannot serve yet with 503 and Retry-After)."""
        if self.serving():
            return True
        recent = self.ready_at is not None and time.monotonic() - self.ready_at < READINESS_GRACE
        return recent and self.running()

    def note(self, line: str) -> None:
        """A line in the replica's log, for what the harness did around it."""
        with self.log_path.open("ab") as log:
            log.write(f"=== {line} ===\n".encode())

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.health_port}{path}"

    def metrics(self) -> str:
        with urllib.request.urlopen(self.url("/metrics"), timeout=5) as response:
            text: str = response.read().decode()
            return text

    def kill(self) -> None:
        """SIGKILL: no cleanup of any kind, as when a node dies under the operator (from
        the image: its container's process killed, then podman)."""
        if self.image is not None:
            podman("kill", "--signal=KILL", self.container_name)
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
            self.process = None
            self.ready_at = None

    def stop(self) -> None:
        """SIGTERM, and SIGKILL after 15 s; a container from the image is removed too."""
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
            self.process = None
            self.ready_at = None
        if self.image is not None:
            podman("rm", "--force", "--ignore", self.container_name)

    def restart(self, *extra: str) -> None:
        self.stop()
        self.start(*extra)

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class WebhookService:
    """Stands in for the Service `muster-system/muster-webhooks` on 127.0.0.1: each
    connection the API server opens goes to a replica that says it is ready, as the
    Service's endpoints would send it; TLS passes through untouched, so the API server
    checks the replica's certificate (from the installed Secret) itself."""

    kubeconfig: Path
    credentials: Path
    settings: dict[str, str]
    port: int = field(default_factory=free_port)
    replicas: list[OperatorProcess] = field(default_factory=list)
    _server: socketserver.ThreadingTCPServer | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> None:
        service = self

        class Forward(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                service.forward(self.request)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", self.port), Forward)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def forward(self, client: socket.socket) -> None:
        for replica in self.replicas:
            if not replica.endpoint():
                continue
            try:
                peer = socket.create_connection(("127.0.0.1", replica.webhook_port), timeout=30)
            except OSError:
                continue  # it went away since: as an endpoint removed, try the next
            peer.settimeout(None)  # the timeout is the dial's: a kept-alive connection idles
            with peer:
                pump = threading.Thread(target=_pump, args=(peer, client), daemon=True)
                pump.start()
                _pump(client, peer)
                pump.join(timeout=30)
            return
        # As a Service without ready endpoints: the connection is refused.
        for replica in self.replicas:
            replica.note("webhook service: a connection refused, no replica is an endpoint")


def podman(*args: str) -> None:
    """A podman command whose failure (its container already gone) does not matter."""
    subprocess.run(["podman", *args], capture_output=True, check=False)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes until `source` closes, then close `sink`'s sending side."""
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def install_crds(kubectl: Kubectl) -> None:
    """Only the CRDs, for tests of the API that need no operator."""
    kubectl("apply", "-f", str(ROOT / "crds"))
    kubectl("wait", "--for=condition=Established", *installed.CRDS, "--timeout=30s")


def installed_operator(
    kubeconfig: Path, log_path: Path, *flags: str, record_trace: bool = False
) -> Generator[OperatorProcess]:
    """Muster installed from the manifests and one replica running until the generator
    is closed; the webhook configurations go with it, so that the cluster does not
    refuse opted-in Jobs once no replica serves them."""
    service = WebhookService(
        kubeconfig=kubeconfig, credentials=log_path.with_suffix(".kubeconfig"), settings={}
    )
    service.settings = installed.install(kubeconfig, service.url)
    installed.service_account_kubeconfig(kubeconfig, service.credentials)
    service.start()
    process = OperatorProcess(
        service=service, log_path=log_path, flags=flags, record_trace=record_trace
    )
    try:
        process.start()
        yield process
    finally:
        for replica in service.replicas:
            replica.stop()
        service.stop()
        installed.remove_webhooks(kubeconfig)


@pytest.fixture(scope="session")
def operator(
    kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """`muster run` for the whole session, as installed, recording its trace."""
    log_path = Path(
        os.environ.get(
            "MUSTER_E2E_OPERATOR_LOG", tmp_path_factory.mktemp("operator") / "operator.log"
        )
    )
    yield from installed_operator(kubeconfig, log_path, record_trace=True)


# ---- building blocks of the scenarios ------------------------------------------------


@dataclass
class NodePool:
    """Simulated nodes only one test uses: tainted and labelled with the pool's name."""

    kubectl: Kubectl
    name: str = field(default_factory=lambda: f"pool-{uuid.uuid4().hex[:6]}")
    nodes: list[str] = field(default_factory=list)

    def add(
        self,
        gpus: int,
        *,
        zone: str = "zone-x",
        cpu: str = "32",
        labels: dict[str, str] | None = None,
        taints: list[dict[str, str]] | None = None,
    ) -> str:
        """One more node; `labels` and `taints` come on top of the pool's own."""
        node = f"{self.name}-{len(self.nodes)}"
        capacity = {"cpu": cpu, "memory": "256Gi", "pods": "110", GPU: str(gpus)}
        self.kubectl.apply(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": node,
                    "annotations": {"kwok.x-k8s.io/node": "fake"},
                    "labels": {
                        "kubernetes.io/hostname": node,
                        "type": "kwok",
                        "topology.kubernetes.io/zone": zone,
                        POOL_LABEL: self.name,
                        **(labels or {}),
                    },
                },
                "spec": {
                    "taints": [
                        {"key": POOL_LABEL, "value": self.name, "effect": "NoSchedule"},
                        *(taints or []),
                    ]
                },
                "status": {"capacity": capacity, "allocatable": capacity},
            }
        )
        self.nodes.append(node)
        wait_until(f"node {node} to be Ready", lambda: self.ready(node), timeout=30)
        return node

    @property
    def toleration(self) -> dict[str, str]:
        """What lets a pod onto the pool's nodes (they are tainted with its name)."""
        return {"key": POOL_LABEL, "operator": "Equal", "value": self.name}

    @property
    def selector(self) -> dict[str, str]:
        """What keeps a pod on the pool's nodes: a nodeSelector."""
        return {POOL_LABEL: self.name}

    def ready(self, node: str) -> bool:
        """Whether the node exists, is Ready and carries no taint of the node controllers."""
        found = self.kubectl("get", "node", node, "-o", "json", check=False)
        if found.returncode != 0:
            return False
        obj = json.loads(found.stdout)
        taints = obj.get("spec", {}).get("taints") or []
        ready = any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in obj.get("status", {}).get("conditions") or []
        )
        return ready and not any(t["key"].startswith("node.kubernetes.io/") for t in taints)

    def delete(self) -> None:
        for node in self.nodes:
            self.kubectl("delete", "node", node, "--ignore-not-found", "--wait=false", check=False)


def cluster_mode(kubeconfig: Path) -> str:
    """How `hack/cluster.py up` started the cluster: plain, job-field or native-gang."""
    mode = kubeconfig.parent / "mode"
    return mode.read_text().strip() if mode.exists() else "plain"


@pytest.fixture
def pool(kubectl: Kubectl) -> Iterator[NodePool]:
    created = NodePool(kubectl)
    yield created
    created.delete()


def gang_job(
    name: str,
    pool: NodePool,
    *,
    workers: int,
    gpus: int = 1,
    policy: str = "gang",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    run_for: str = LONG_RUNNING,
    priority_class: str | None = None,
    pod_labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    affinity: dict[str, Any] | None = None,
    topology_spread: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Job of `workers` pods, each asking for `gpus` GPUs, on the pool's nodes only.

    `pod_labels`, `affinity` (the pod's `spec.affinity`) and `topology_spread` (its
    `topologySpreadConstraints`) go to the pod template as they are; `node_selector`
    and `tolerations` come on top of the pool's own.
    """
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": {**pool.selector, **(node_selector or {})},
        "tolerations": [pool.toleration, *(tolerations or [])],
        "containers": [
            {
                "name": "worker",
                "image": "trainer",
                "resources": {"requests": {"cpu": "100m"}, "limits": {GPU: str(gpus)}},
            }
        ],
    }
    if priority_class is not None:
        pod_spec["priorityClassName"] = priority_class
    if affinity is not None:
        pod_spec["affinity"] = affinity
    if topology_spread is not None:
        pod_spec["topologySpreadConstraints"] = topology_spread
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "labels": {POLICY_LABEL: policy, **(labels or {})},
            "annotations": annotations or {},
        },
        "spec": {
            "parallelism": workers,
            "completions": workers,
            "backoffLimit": 100,
            "template": {
                "metadata": {
                    "labels": dict(pod_labels or {}),
                    "annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": run_for},
                },
                "spec": pod_spec,
            },
        },
    }


def gang_pod_group(name: str, min_count: int) -> dict[str, Any]:
    """A PodGroup of Muster's, a gang of `min_count`, for pods that name it."""
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def pods_of(kubectl: Kubectl, namespace: str, group: str) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = kubectl.json(
        "get", "pods", "-n", namespace, "-l", f"{GROUP_LABEL}={group}"
    )["items"]
    return [pod for pod in pods if not pod["metadata"].get("deletionTimestamp")]


def node_selector_terms(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod's required node affinity terms, as the API server stores them."""
    affinity = (pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return list(required.get("nodeSelectorTerms") or [])


def pinned_to(pod: dict[str, Any]) -> str | None:
    """The node a released pod is pinned to: the `metadata.name` its node affinity requires."""
    for term in node_selector_terms(pod):
        for requirement in term.get("matchFields") or []:
            if requirement.get("key") == "metadata.name" and requirement.get("operator") == "In":
                return str(requirement["values"][0])
    return None


def is_gated(pod: dict[str, Any]) -> bool:
    return has_gang_gate(pod["spec"].get("schedulingGates") or [])


# A second scheduling gate of the user's own: a pod Muster has released stays unbound
# until the test lifts it, which holds a gang between its release and its binding.
HOLD_GATE = "e2e.muster.dev/hold"


def held(job: dict[str, Any]) -> dict[str, Any]:
    """The Job, its pods born with the hold gate."""
    job["spec"]["template"]["spec"]["schedulingGates"] = [{"name": HOLD_GATE}]
    return job


def lift_holds(kubectl: Kubectl, namespace: str, pods: list[dict[str, Any]]) -> None:
    """Remove the hold gate of pods Muster has released (their only gate left)."""
    for pod in pods:
        kubectl(
            "patch",
            "pod",
            pod["metadata"]["name"],
            "-n",
            namespace,
            "--type=json",
            "-p",
            '[{"op": "remove", "path": "/spec/schedulingGates"}]',
        )


def pod_group(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = kubectl.json("get", POD_GROUPS, name, "-n", namespace)
    return found


def group_status(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any]:
    """The PodGroup's status, or {} while the group (made by its Job's expansion) is missing."""
    found = kubectl("get", POD_GROUPS, name, "-n", namespace, "-o", "json", check=False)
    if found.returncode != 0:
        return {}
    status: dict[str, Any] = json.loads(found.stdout).get("status") or {}
    return status


def scheduled_condition(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any]:
    """The PodGroupScheduled condition, or {} while the group or condition is missing."""
    for item in group_status(kubectl, namespace, name).get("conditions") or []:
        if item["type"] == "PodGroupScheduled":
            return dict(item)
    return {}


def wait_for_reason(
    kubectl: Kubectl, namespace: str, name: str, reason: str, timeout: float = 30
) -> dict[str, Any]:
    wait_until(
        f"PodGroup {name} to say {reason}",
        lambda: scheduled_condition(kubectl, namespace, name).get("reason") == reason,
        timeout=timeout,
    )
    return scheduled_condition(kubectl, namespace, name)


def bound(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [pod for pod in pods if pod["spec"].get("nodeName")]


def wait_all_bound(
    kubectl: Kubectl, namespace: str, group: str, count: int, timeout: float = 30
) -> list[dict[str, Any]]:
    def done() -> bool:
        pods = pods_of(kubectl, namespace, group)
        return len(pods) == count and len(bound(pods)) == count

    wait_until(f"{count} pods of {group} bound", done, timeout=timeout)
    return pods_of(kubectl, namespace, group)


def muster(*args: str, stdin: str | None = None) -> str:
    """What the `muster` command prints (it must succeed)."""
    return subprocess.run(
        [sys.executable, "-c", "import sys; from muster.cli import main; sys.exit(main())", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout


def explained(operator: OperatorProcess, namespace: str, name: str) -> str:
    """`muster explain podgroup NAME` against the test cluster."""
    return muster(
        "explain", "podgroup", name, "-n", namespace, f"--kubeconfig={operator.kubeconfig}"
    )


def simulated(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any]:
    """The PodGroup's entry in `muster simulate -o json` over a dump of the cluster
    (`kubectl get nodes,pods,podgroups,workloads,jobs,priorityclasses -A -o yaml`)."""
    kinds = f"nodes,pods,{POD_GROUPS},{WORKLOADS},jobs,priorityclasses"
    dump = kubectl("get", kinds, "-A", "-o", "yaml").stdout
    report = json.loads(muster("simulate", "-", "-o", "json", stdin=dump))
    [entry] = [
        group
        for group in report["podGroups"]
        if (group["namespace"], group["name"]) == (namespace, name)
    ]
    found: dict[str, Any] = entry
    return found


def steps_for(cycles: list[ReplayedCycle], namespace: str, name: str) -> list[str]:
    """The kinds of the steps decided for one PodGroup, cycle after cycle."""
    group = f"{namespace}/{name}"
    return [
        step["kind"]
        for cycle in cycles
        for step in cycle.replayed["steps"]
        if step["group"] == group
    ]


def admissions_for(cycles: list[ReplayedCycle], namespace: str, name: str) -> list[dict[str, Any]]:
    """The admissions decided for one PodGroup (placements, domain, victims), in order."""
    group = f"{namespace}/{name}"
    return [
        admission
        for cycle in cycles
        for admission in cycle.replayed["admissions"]
        if admission["group"] == group
    ]


def releases_for(cycles: list[ReplayedCycle], namespace: str, name: str) -> list[str]:
    """Every pod the operator's cycles released for one PodGroup, once per release."""
    group = f"{namespace}/{name}"
    return [
        pod
        for cycle in cycles
        for step in cycle.replayed["steps"]
        for action in step["actions"]
        if action.get("release") == group
        for pod, _ in action["placements"]
    ]


def events_for(kubectl: Kubectl, namespace: str, name: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = kubectl.json(
        "get", "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}"
    )["items"]
    return events


def gang_scheduled_by(kubectl: Kubectl, namespace: str, name: str) -> set[str]:
    """The replicas (`reportingInstance`) that reported the PodGroup `name` Scheduled."""
    return {
        event["reportingInstance"]
        for event in events_for(kubectl, namespace, name)
        if event["reason"] == "Scheduled" and event["involvedObject"]["kind"] == "PodGroup"
    }


@pytest.fixture
def volumes(kubectl: Kubectl) -> Iterator[list[str]]:
    """PersistentVolumes a test makes (cluster-scoped: its namespace does not take them)."""
    made: list[str] = []
    yield made
    for name in made:
        kubectl("delete", "pv", name, "--ignore-not-found", "--wait=false", check=False)


@pytest.fixture
def priorities(kubectl: Kubectl, namespace: str) -> Iterator[tuple[str, str]]:
    """A low and a high PriorityClass (100, 1000) for the test, removed after it."""
    low, high = f"{namespace}-low", f"{namespace}-high"
    for name, value in ((low, 100), (high, 1000)):
        kubectl.apply(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
    yield low, high
    kubectl("delete", "priorityclass", low, high, "--ignore-not-found", check=False)
