#!/usr/bin/env python3
"""A real, local Kubernetes control plane for Muster's tests and demo.

Runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK (which
simulates the nodes and their kubelets) as plain processes on loopback ports, from
the binaries `hack/build.sh` compiles. Only the standard library is used, so this
works before any virtualenv exists.

    cluster.py up [--nodes FILE] [--job-scheduling-field | --native-gang] [--kueue] [--audit]
                  [--kueue-pods-ready-timeout DURATION]
                  [--no-watch-cache] [--priority-and-fairness]
                  [--nodes-timeout SECONDS] [--node-lease-seconds SECONDS]
    cluster.py down
    cluster.py status
    cluster.py restart COMPONENT    (stop one component and start it as it was started)
    cluster.py compact              (compact etcd's history up to its current revision)

State lives in `.cluster/` of the checkout (kubeconfig, PKI, logs, pids); `down`
stops exactly the processes whose pids `up` recorded and removes that folder.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

HACK = Path(__file__).resolve().parent
ROOT = HACK.parent
STATE = Path(os.environ.get("MUSTER_CLUSTER_DIR", ROOT / ".cluster"))
KUBECONFIG = STATE / "kubeconfig"
DEFAULT_NODES = HACK / "nodes" / "gpu-cluster.yaml"

# Components in start order; `down` stops them in reverse.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
# Started after them with `up --kueue` (hack/kueue.py).
KUEUE = "kueue"
# Muster itself, when `make run` started it on this cluster (hack/run.py).
MUSTER = "muster"
# Warns of Jobs that opt into gang scheduling while Muster does not run here.
MUSTER_ABSENT = HACK / "manifests" / "muster-absent.yaml"

# Feature gates for the two optional API server modes (see docs/native-job-field.md):
# the Job `spec.scheduling` field alone, or the whole native gang scheduling stack.
# GenericWorkload is a gate from 1.35 on, WorkloadWithJob and
# TopologyAwareWorkloadScheduling from 1.36 (pkg/features/kube_features.go of each
# release); the Job field itself from 1.37 (pkg/apis/batch/types.go). An older API
# server refuses to start with a gate it does not know, so `mode_gates` asks the
# binary which it knows.
JOB_FIELD_GATES = ("GenericWorkload", "WorkloadWithJob")
# Both modes serve scheduling.k8s.io/v1beta1 (`--runtime-config`), which, like the Job
# field, exists from 1.37: 1.36 has the gates but only v1alpha2.
MODES_SINCE_MINOR = 37
NATIVE_GANG_GATES = (*JOB_FIELD_GATES, "TopologyAwareWorkloadScheduling")
MODE_GATES = {"job-field": JOB_FIELD_GATES, "native-gang": NATIVE_GANG_GATES}

# KWOK renews node Leases every quarter of this; thousands of nodes renewing every 10 s
# would keep two cores busy, so large benchmarks ask for longer Leases.
DEFAULT_NODE_LEASE_SECONDS = 40

# The client-side rate limit of the controllers and the scheduler (their defaults are
# for clusters whose API server has many cores); benchmarks give Muster the same.
CLIENT_QPS = 500
CLIENT_BURST = 1000

# With `--audit`, every request is logged at Metadata level (who, which verb on what,
# with which user agent, when; never bodies), so benchmarks can count API requests per
# client. RequestReceived is left out: each request then appears once when it ends
# (watches also when their response starts).
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
"""


def versions() -> dict[str, str]:
    """Read the pinned component versions from versions.env (the one place they live);
    KUBE_VERSION from the environment wins over its default, as in build.sh."""
    pairs = {}
    for line in (HACK / "versions.env").read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            pairs[key.strip()] = value.strip()
    pairs["KUBE_VERSION"] = os.environ.get("KUBE_VERSION") or pairs["KUBE_VERSION"]
    return pairs


def supported_versions() -> list[str]:
    """The Kubernetes versions `make test-versions` runs on (versions.env)."""
    return versions()["SUPPORTED_KUBE_VERSIONS"].split(",")


def cache_dir() -> Path:
    """Where `build.sh` keeps what it builds."""
    return Path(os.environ.get("MUSTER_CACHE", Path.home() / ".cache" / "muster"))


def bin_dir() -> Path:
    return cache_dir() / "k8s" / versions()["KUBE_VERSION"] / "bin"


def log(message: str) -> None:
    print(f"[cluster] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def run(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=True, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload, no-any-return]


# --- PKI ------------------------------------------------------------------------------


def openssl(pki: Path, *args: str) -> None:
    run("openssl", *args, cwd=str(pki))


def make_ca(pki: Path, subject: str, *extensions: str) -> None:
    """`ca.key` and a self-signed `ca.crt` in `pki`, with extra `-addext` extensions.

    Keys are written in PKCS #1 (`-traditional`), which every reader here accepts
    (Kueue parses its CA key only in that form)."""
    openssl(pki, "genrsa", "-traditional", "-out", "ca.key", "2048")
    added = [arg for extension in extensions for arg in ("-addext", extension)]
    openssl(
        pki,
        "req",
        "-x509",
        "-new",
        "-nodes",
        "-key",
        "ca.key",
        "-subj",
        subject,
        *added,
        "-days",
        "3650",
        "-out",
        "ca.crt",
    )


def issue_cert(pki: Path, name: str, subject: str, ext: str) -> None:
    """`NAME.key` and `NAME.crt` signed by the CA in `pki`, with the extensions in `ext`."""
    openssl(pki, "genrsa", "-traditional", "-out", f"{name}.key", "2048")
    openssl(pki, "req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr")
    openssl(
        pki,
        "x509",
        "-req",
        "-in",
        f"{name}.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "3650",
        "-extfile",
        ext,
        "-out",
        f"{name}.crt",
    )


def issue_serving_cert(pki: Path, subject: str, alt_names: str) -> None:
    """`tls.key` and `tls.crt` signed by the CA in `pki`, serving `alt_names` (a
    subjectAltName value: `DNS:name,IP:127.0.0.1`): what a webhook server presents."""
    (pki / "tls.ext").write_text(
        f"subjectAltName={alt_names}\n"
        "extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n"
    )
    issue_cert(pki, "tls", subject, "tls.ext")


def make_pki(pki: Path) -> None:
    """A CA, the API server's serving cert, an admin client cert and the SA key pair."""
    pki.mkdir(parents=True, exist_ok=True)
    make_ca(pki, "/CN=muster-local-ca")
    (pki / "server.ext").write_text(
        "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc\n"
        "extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n"
    )
    (pki / "client.ext").write_text(
        "extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n"
    )
    issue_cert(pki, "apiserver", "/CN=kube-apiserver", "server.ext")
    issue_cert(pki, "admin", "/O=system:masters/CN=muster-admin", "client.ext")
    openssl(pki, "genrsa", "-out", "sa.key", "2048")
    openssl(pki, "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")


def write_kubeconfig(path: Path, pki: Path, server: str) -> None:
    """JSON is valid YAML, so the kubeconfig needs no YAML library."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "muster",
                "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate": str(pki / "admin.crt"),
                    "client-key": str(pki / "admin.key"),
                },
            }
        ],
        "contexts": [{"name": "muster", "context": {"cluster": "muster", "user": "admin"}}],
        "current-context": "muster",
    }
    path.write_text(json.dumps(config, indent=2) + "\n")


# --- processes ----------------------------------------------------------------------


def start(name: str, args: list[str], env: dict[str, str] | None = None) -> None:
    logs = STATE / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (STATE / "commands").mkdir(exist_ok=True)
    (STATE / "commands" / f"{name}.json").write_text(json.dumps(args) + "\n")
    with (logs / f"{name}.log").open("a") as out:
        proc = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
    (STATE / "pids").mkdir(exist_ok=True)
    (STATE / "pids" / f"{name}.pid").write_text(f"{proc.pid}\n")
    log(f"started {name} (pid {proc.pid}, log {logs / f'{name}.log'})")


def pid_of(name: str) -> int | None:
    path = STATE / "pids" / f"{name}.pid"
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # A zombie counts as dead.
    try:
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False


def wait_for(
    what: str, check: Callable[[], bool], component: str | None, timeout: float = 120.0
) -> None:
    """Poll `check` until it holds; on failure name the component and its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if component and not alive(pid_of(component)):
            fail(f"{component} exited while waiting for {what}", component)
        try:
            if check():
                return
        except (OSError, urllib.error.URLError, subprocess.CalledProcessError):
            pass
        time.sleep(0.5)
    fail(f"timed out after {timeout:.0f}s waiting for {what}", component)


def fail(message: str, component: str | None) -> None:
    where = f"; see {STATE / 'logs' / f'{component}.log'}" if component else ""
    tail: list[str] = []
    if component:
        tail = (STATE / "logs" / f"{component}.log").read_text(errors="replace").splitlines()
    if any("address already in use" in line for line in tail[-15:]):
        raise PortTakenError(f"{component}'s port was taken: {message}")
    log(f"FAILED: {message}{where}")
    for line in tail[-15:]:
        print(f"    {line}", file=sys.stderr)
    sys.exit(1)


def https_ok(url: str, pki: Path) -> bool:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    with urllib.request.urlopen(url, context=context, timeout=3) as response:
        return bool(response.status == 200)


def insecure_ok(url: str) -> bool:
    """Controller-manager and scheduler serve /healthz with self-signed certs."""
    context = ssl._create_unverified_context()
    with urllib.request.urlopen(url, context=context, timeout=3) as response:
        return bool(response.status == 200)


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=3) as response:
        return bool(response.status == 200)


def kubectl(
    *args: str, stdin: str | None = None, kubeconfig: Path = KUBECONFIG
) -> subprocess.CompletedProcess[str]:
    return run(str(bin_dir() / "kubectl"), f"--kubeconfig={kubeconfig}", *args, input=stdin)


# --- KWOK configuration -------------------------------------------------------------


# A deleted (or evicted) pod first stops, as a kubelet would stop it: its phase becomes
# Failed. Only then is it removed. KWOK's own fast pod-delete stage skips the first
# step, so a Job with a podFailurePolicy (which waits for a terminal phase before it
# counts or replaces a pod) would keep such a pod Terminating forever.
POD_TERMINATE_STAGES = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-terminate
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending', 'Running']
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 137
            finishedAt: {{ $now | Quote }}
            reason: Error
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'In'
      values: ['Succeeded', 'Failed']
  next:
    delete: true
"""


def kwok_config(path: Path, node_lease_seconds: int = DEFAULT_NODE_LEASE_SECONDS) -> None:
    """KWOK's configuration plus the stages that make nodes Ready and pods run.

    Job-owned pods complete after the delay in the annotation
    `pod-complete.stage.kwok.x-k8s.io/delay` (a Go duration), 5 s when it is absent, so
    Jobs reach Complete; tests that need long-running pods set a long delay. KWOK
    renews each node's Lease every quarter of `node_lease_seconds`.
    """
    stages = bin_dir().parent / "stages"
    parts = [
        "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\n"
        "options:\n  manageAllNodes: true\n  podPlayStageParallelism: 16\n"
        "  nodePlayStageParallelism: 8\n  nodeLeaseParallelism: 8\n"
        "  podsOnNodeSyncParallelism: 4\n"
        f"  nodeLeaseDurationSeconds: {node_lease_seconds}\n",
    ]
    for rel in (
        "node/fast/node-initialize.yaml",
        "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        "pod/fast/pod-ready.yaml",
    ):
        parts.append((stages / rel).read_text())
    parts.append(POD_TERMINATE_STAGES)
    complete = (stages / "pod/general/pod-complete.yaml").read_text()
    complete = complete.replace("durationMilliseconds: 1000", "durationMilliseconds: 5000")
    # Without jitter the delay is exactly the annotation's (a jitter below it wins).
    complete = "\n".join(
        line
        for line in complete.splitlines()
        if "jitterDuration" not in line and "jitter-delay" not in line
    )
    parts.append(complete)
    path.write_text("\n---\n".join(part.strip() + "\n" for part in parts))


# --- commands -----------------------------------------------------------------------


def components() -> tuple[str, ...]:
    """The components `up` started, in start order: Kueue too when it was asked for,
    and Muster when `make run` started it (hack/run.py)."""
    return tuple(
        name
        for name in (*COMPONENTS, KUEUE, MUSTER)
        if name in COMPONENTS or pid_of(name) is not None
    )


def healthy() -> bool:
    if not KUBECONFIG.exists() or not all(alive(pid_of(c)) for c in components()):
        return False
    try:
        kubectl("get", "--raw", "/readyz")
    except subprocess.CalledProcessError:
        return False
    return True


def audit_flags(audit: bool) -> list[str]:
    """API server flags that log every request (see AUDIT_POLICY), when asked for."""
    if not audit:
        return []
    (STATE / "audit-policy.yaml").write_text(AUDIT_POLICY)
    return [
        f"--audit-policy-file={STATE / 'audit-policy.yaml'}",
        f"--audit-log-path={STATE / 'logs' / 'audit.log'}",
        "--audit-log-format=json",
    ]


def grace_period_flags(node_lease_seconds: int) -> list[str]:
    """With longer node Leases, the controller-manager waits a whole Lease for renewal."""
    if node_lease_seconds == DEFAULT_NODE_LEASE_SECONDS:
        return []
    return [f"--node-monitor-grace-period={node_lease_seconds + 10}s"]


START_ATTEMPTS = 3


class PortTakenError(Exception):
    """A component could not listen: its port, free when chosen, was taken since."""


def up(args: argparse.Namespace) -> None:
    """Start what is not running; a start that fails, however it fails, stops the
    components it started (their logs stay for the reader; the next `up` removes
    them), so nothing is left running that nobody stops."""
    try:
        if healthy():
            running, asked = running_version(), versions()["KUBE_VERSION"]
            if running != asked:
                fail(f"Kubernetes {running} is up here, not {asked}: `down` first", None)
            log(f"already up; KUBECONFIG={KUBECONFIG}")
        else:
            start_with_free_ports(args)
        if args.kueue and not alive(pid_of(KUEUE)):
            start_kueue(args.kueue_pods_ready_timeout)
    except BaseException:
        for name in reversed(components()):
            stop(name)
        raise


def start_with_free_ports(args: argparse.Namespace) -> None:
    """Start the control plane, again with other ports when one was taken meanwhile.

    Ports are chosen free and only bound by the component later; in between, any
    process's outgoing connection may get the same port from the kernel (another
    cluster's clients, on the same machine, make thousands)."""
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            start_control_plane(args)
            return
        except PortTakenError as error:
            if attempt == START_ATTEMPTS:
                fail(str(error), None)
            log(f"{error}; starting again with other ports")
            down(args)


def start_control_plane(args: argparse.Namespace) -> None:
    if STATE.exists():
        log("found a partial cluster; cleaning it up first")
        down(args)
    build(with_kueue=args.kueue)
    bins = bin_dir()
    t0 = time.monotonic()
    pki = STATE / "pki"
    make_pki(pki)
    ports = {
        name: free_port()
        for name in ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok")
    }
    server = f"https://127.0.0.1:{ports['apiserver']}"
    write_kubeconfig(KUBECONFIG, pki, server)

    etcd_url = f"http://127.0.0.1:{ports['etcd']}"
    peer_url = f"http://127.0.0.1:{ports['etcd-peer']}"
    start(
        "etcd",
        [
            str(bins / "etcd"),
            "--name=n0",
            f"--data-dir={STATE / 'etcd'}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=n0={peer_url}",
            "--unsafe-no-fsync",
            "--log-level=warn",
            "--quota-backend-bytes=8589934592",
        ],
    )
    wait_for("etcd health", lambda: http_ok(f"{etcd_url}/health"), "etcd")

    args.mode = mode_for_version(args.mode, bins)
    gates = ",".join(f"{gate}=true" for gate in MODE_GATES.get(args.mode, ()))
    apiserver = [
        str(bins / "kube-apiserver"),
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        # The advertised address is loopback, which the endpoint reconciler refuses.
        "--endpoint-reconciler-type=none",
        f"--secure-port={ports['apiserver']}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--service-account-issuer={server}",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--authorization-mode=Node,RBAC",
        f"--enable-priority-and-fairness={str(args.priority_and_fairness).lower()}",
        "--max-requests-inflight=2000",
        "--max-mutating-requests-inflight=1000",
    ]
    if gates:
        apiserver.append(f"--feature-gates={gates}")
        if args.mode == "native-gang":
            apiserver.append("--runtime-config=scheduling.k8s.io/v1beta1=true")
    apiserver += audit_flags(args.audit)
    if not args.watch_cache:
        # Watches then read etcd directly, so a compaction reaches them.
        apiserver.append("--watch-cache=false")
    start("kube-apiserver", apiserver)
    wait_for("kube-apiserver /readyz", lambda: https_ok(f"{server}/readyz", pki), "kube-apiserver")

    common = [
        f"--kubeconfig={KUBECONFIG}",
        f"--authentication-kubeconfig={KUBECONFIG}",
        f"--authorization-kubeconfig={KUBECONFIG}",
        "--bind-address=127.0.0.1",
        "--leader-elect=false",
        f"--kube-api-qps={CLIENT_QPS}",
        f"--kube-api-burst={CLIENT_BURST}",
    ]
    component_gates = [f"--feature-gates={gates}"] if args.mode == "native-gang" else []
    start(
        "kube-controller-manager",
        [
            str(bins / "kube-controller-manager"),
            *common,
            *component_gates,
            f"--secure-port={ports['controller-manager']}",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            "--use-service-account-credentials",
            "--controllers=*",
            "--concurrent-job-syncs=20",
            *grace_period_flags(args.node_lease_seconds),
        ],
    )
    start(
        "kube-scheduler",
        [
            str(bins / "kube-scheduler"),
            *common,
            *component_gates,
            f"--secure-port={ports['scheduler']}",
        ],
    )
    wait_for(
        "kube-controller-manager /healthz",
        lambda: insecure_ok(f"https://127.0.0.1:{ports['controller-manager']}/healthz"),
        "kube-controller-manager",
    )
    wait_for(
        "kube-scheduler /healthz",
        lambda: insecure_ok(f"https://127.0.0.1:{ports['scheduler']}/healthz"),
        "kube-scheduler",
    )

    kwok_config(STATE / "kwok.yaml", args.node_lease_seconds)
    start(
        "kwok",
        [
            str(bins / "kwok"),
            f"--kubeconfig={KUBECONFIG}",
            f"--config={STATE / 'kwok.yaml'}",
            "--server-address=127.0.0.1:" + str(ports["kwok"]),
        ],
    )

    nodes = Path(args.nodes)
    kubectl("apply", "-f", str(nodes))
    count = len(json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"])

    def nodes_ready() -> bool:
        items = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
        ready = [
            n
            for n in items
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in n.get("status", {}).get("conditions", [])
            )
            and not any(
                t["key"] == "node.kubernetes.io/not-ready"
                for t in n.get("spec", {}).get("taints", [])
            )
        ]
        return len(ready) == count

    wait_for(f"{count} simulated nodes Ready", nodes_ready, "kwok", timeout=args.nodes_timeout)
    wait_for(
        "the default ServiceAccount",
        lambda: kubectl("get", "serviceaccount", "default", "-n", "default").returncode == 0,
        "kube-controller-manager",
    )
    kubectl("apply", "-f", str(MUSTER_ABSENT))
    (STATE / "mode").write_text(args.mode + "\n")
    (STATE / "version").write_text(versions()["KUBE_VERSION"] + "\n")
    log(
        f"up in {time.monotonic() - t0:.1f}s with {count} nodes "
        f"(Kubernetes {versions()['KUBE_VERSION']}, {args.mode})"
    )
    log(f"export KUBECONFIG={KUBECONFIG}")
    log(f"kubectl: {bins / 'kubectl'}")


def running_version() -> str:
    """The Kubernetes version the cluster in STATE was started with."""
    recorded = STATE / "version"
    return recorded.read_text().strip() if recorded.exists() else versions()["KUBE_VERSION"]


def known_gates(bins: Path) -> set[str]:
    """The feature gates this version's kube-apiserver knows (from its `--help`)."""
    text = run(str(bins / "kube-apiserver"), "--help").stdout
    return set(re.findall(r"(?:kube:)?(\w+)=true\|false", text))


def mode_for_version(mode: str, bins: Path) -> str:
    """The mode asked for, where this version has its gates; else plain, said.

    The field alone (`--job-scheduling-field`, which the e2e cluster asks for) falls
    back to plain on a version without its gates: such an API server drops the field
    as a plain one does, so the tests of the field skip as they do there. The
    cluster's own gang scheduling has no such fallback: asked for, it fails.
    """
    wanted = MODE_GATES.get(mode, ())
    if not wanted:
        return mode
    version = versions()["KUBE_VERSION"]
    missing = [gate for gate in wanted if gate not in known_gates(bins)]
    if missing:
        lacks = f"no feature gate {', '.join(missing)}"
    elif int(version.split(".")[1]) < MODES_SINCE_MINOR:
        lacks = "no Job spec.scheduling field nor scheduling.k8s.io/v1beta1 (from 1.37)"
    else:
        return mode
    if mode == "native-gang":
        fail(f"Kubernetes {version} has {lacks}", None)
    log(f"Kubernetes {version} has {lacks}: plain mode")
    return "plain"


def build(*, with_kueue: bool) -> None:
    """What the cluster runs, built on first use (`build.sh`): Kueue only when asked
    for, so that a cluster without it never waits minutes for its first build, and
    never helm, which no cluster runs."""
    subprocess.run(
        [str(HACK / "build.sh"), "--without-helm", *(() if with_kueue else ("--without-kueue",))],
        check=True,
    )


def start_kueue(pods_ready_timeout: str | None = None) -> None:
    """Kueue's manager beside the control plane (hack/kueue.py, on this cluster)."""
    build(with_kueue=True)
    env = {**os.environ, "MUSTER_CLUSTER_DIR": str(STATE)}
    command = [sys.executable, "-m", "hack.kueue", "up"]
    if pods_ready_timeout is not None:
        command.append(f"--pods-ready-timeout={pods_ready_timeout}")
    subprocess.run(command, check=True, cwd=ROOT, env=env)


def stop(name: str) -> None:
    """SIGTERM to the component's process group, SIGKILL after 10 s."""
    pid = pid_of(name)
    if not alive(pid):
        return
    assert pid is not None
    os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        os.killpg(pid, signal.SIGKILL)
    log(f"stopped {name} (pid {pid})")


def down(_: argparse.Namespace) -> None:
    for name in reversed(components()):
        stop(name)
    shutil.rmtree(STATE, ignore_errors=True)
    log("down")


def restart(args: argparse.Namespace) -> None:
    """Stop one component and start it again with the command line `up` gave it.

    For fault tests: the rest of the cluster keeps running, and its clients see the
    component go away and come back. Waits until kube-apiserver is ready again.
    """
    name = args.component
    command = json.loads((STATE / "commands" / f"{name}.json").read_text())
    stop(name)
    start(name, command)
    if name == "kube-apiserver":
        server = json.loads(KUBECONFIG.read_text())["clusters"][0]["cluster"]["server"]
        pki = STATE / "pki"
        wait_for("kube-apiserver /readyz", lambda: https_ok(f"{server}/readyz", pki), name)


def etcd_url() -> str:
    command = json.loads((STATE / "commands" / "etcd.json").read_text())
    flag = next(arg for arg in command if arg.startswith("--advertise-client-urls="))
    return str(flag.partition("=")[2])


def etcd_call(path: str, body: dict[str, object]) -> dict[str, object]:
    """One call to etcd's JSON gateway (etcd speaks gRPC; this is its HTTP face)."""
    request = urllib.request.Request(
        etcd_url() + path, data=json.dumps(body).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer: dict[str, object] = json.loads(response.read())
        return answer


def compact(_: argparse.Namespace) -> None:
    """Drop etcd's history up to its current revision, as its periodic compaction does.

    A watch that resumes from a revision before it then gets 410 Gone from an API
    server that serves watches from etcd (`--no-watch-cache`).
    """
    header = etcd_call("/v3/maintenance/status", {})["header"]
    assert isinstance(header, dict)
    revision = int(header["revision"])
    etcd_call("/v3/kv/compaction", {"revision": revision, "physical": True})
    log(f"compacted etcd at revision {revision}")


def status(_: argparse.Namespace) -> None:
    if not STATE.exists():
        log("down")
        sys.exit(1)
    ok = True
    for name in components():
        pid = pid_of(name)
        state = "running" if alive(pid) else "NOT RUNNING"
        ok &= alive(pid)
        rss = ""
        if alive(pid):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss = f"  rss {int(line.split()[1]) // 1024} MiB"
        log(f"{name:<24} {state} (pid {pid}){rss}")
    mode = (STATE / "mode").read_text().strip() if (STATE / "mode").exists() else "?"
    log(f"Kubernetes {running_version()}, mode {mode}; KUBECONFIG={KUBECONFIG}")
    if ok:
        print(kubectl("get", "nodes", "-L", "topology.kubernetes.io/zone").stdout, end="")
    sys.exit(0 if ok else 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up_parser = sub.add_parser("up", help="start the control plane (harmless when already up)")
    up_parser.add_argument(
        "--nodes", default=str(DEFAULT_NODES), help="YAML file of Node objects for KWOK to simulate"
    )
    mode = up_parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--job-scheduling-field",
        dest="mode",
        action="store_const",
        const="job-field",
        help="API server keeps Job spec.scheduling (native gang scheduling off)",
    )
    mode.add_argument(
        "--native-gang",
        dest="mode",
        action="store_const",
        const="native-gang",
        help="enable the native 1.37 gang scheduling in every component",
    )
    up_parser.add_argument(
        "--kueue",
        action="store_true",
        help="run Kueue's manager beside the control plane (webhooks on loopback)",
    )
    up_parser.add_argument(
        "--kueue-pods-ready-timeout",
        metavar="DURATION",
        help="Kueue's waitForPodsReady timeout (default: hack/kueue.py's, for the tests)",
    )
    up_parser.add_argument(
        "--nodes-timeout",
        type=float,
        default=120.0,
        help="seconds to wait for every node to be Ready (thousands of nodes need more)",
    )
    up_parser.add_argument(
        "--node-lease-seconds",
        type=int,
        default=DEFAULT_NODE_LEASE_SECONDS,
        help="node Lease duration; KWOK renews every quarter of it (longer for many nodes)",
    )
    up_parser.add_argument(
        "--audit",
        action="store_true",
        help="log every API request at Metadata level to logs/audit.log (for benchmarks)",
    )
    up_parser.add_argument(
        "--priority-and-fairness",
        action="store_true",
        help="API Priority and Fairness on (off by default: one client must not wait on "
        "another's seats in benchmarks; the soak throttles the operator with it)",
    )
    up_parser.add_argument(
        "--no-watch-cache",
        dest="watch_cache",
        action="store_false",
        help="serve watches from etcd, not the API server's cache (for fault tests)",
    )
    up_parser.set_defaults(handler=up, mode="plain")
    sub.add_parser("down", help="stop what `up` started and remove its state").set_defaults(
        handler=down
    )
    sub.add_parser("status", help="component health, memory and nodes").set_defaults(handler=status)
    restart_parser = sub.add_parser("restart", help="stop one component and start it again")
    restart_parser.add_argument("component", choices=(*COMPONENTS, KUEUE))
    restart_parser.set_defaults(handler=restart)
    sub.add_parser("compact", help="compact etcd up to its current revision").set_defaults(
        handler=compact
    )
    args = parser.parse_args()
    try:
        args.handler(args)
    except PortTakenError as error:  # where no fresh ports can be chosen (a restart)
        log(f"FAILED: {error}")
        sys.exit(1)


if __name__ == "__main__":
    main()
