"""Starting the control plane, one component after another, each waited for.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK (which
simulates the nodes and their kubelets) run as plain processes on loopback ports,
from the binaries `hack/build.sh` compiles. The flags follow each component's own
options (cmd/kube-apiserver/app/options, cmd/kube-controller-manager/app/options and
cmd/kube-scheduler/app/options of Kubernetes v1.37.2) and KWOK's configuration.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from devtools.builds import HACK, ROOT, bin_dir, versions
from devtools.cluster import layout
from devtools.cluster.kwok import DEFAULT_NODE_LEASE_SECONDS, kwok_config
from devtools.cluster.layout import MUSTER_ABSENT, log, run
from devtools.cluster.pki import make_pki, write_kubeconfig
from devtools.cluster.probes import http_ok, https_ok, insecure_ok
from devtools.cluster.processes import fail, start, stop_all, wait_for
from devtools.kubectl import Kubectl
from devtools.ports import free_port

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


@dataclass(frozen=True)
class Endpoints:
    """The loopback ports the components listen on, each chosen free, and the PKI."""

    ports: dict[str, int]
    pki: Path

    @classmethod
    def chosen(cls, pki: Path) -> Endpoints:
        names = ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok")
        return cls({name: free_port() for name in names}, pki)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def etcd(self) -> str:
        return f"http://127.0.0.1:{self.ports['etcd']}"


def start_control_plane(args: argparse.Namespace) -> None:
    """Every component in order, each ready before the next; then the nodes of
    `args.nodes`, Ready, and the default ServiceAccount."""
    if layout.STATE.exists():
        log("found a partial cluster; cleaning it up first")
        stop_all()
    build(with_kueue=args.kueue)
    t0 = time.monotonic()
    pki = layout.STATE / "pki"
    make_pki(pki)
    endpoints = Endpoints.chosen(pki)
    write_kubeconfig(layout.KUBECONFIG, pki, endpoints.server)
    start_etcd(endpoints)
    args.mode = mode_for_version(args.mode, bin_dir())
    start_apiserver(endpoints, args)
    start_controllers(endpoints, args)
    start_kwok(endpoints, args.node_lease_seconds)
    count = register_nodes(Path(args.nodes), args.nodes_timeout)
    Kubectl(layout.KUBECONFIG)("apply", "-f", str(MUSTER_ABSENT))
    (layout.STATE / "mode").write_text(args.mode + "\n")
    (layout.STATE / "version").write_text(versions()["KUBE_VERSION"] + "\n")
    log(
        f"up in {time.monotonic() - t0:.1f}s with {count} nodes "
        f"(Kubernetes {versions()['KUBE_VERSION']}, {args.mode})"
    )
    log(f"export KUBECONFIG={layout.KUBECONFIG}")
    log(f"kubectl: {Kubectl(layout.KUBECONFIG).command()[0]}")


def start_etcd(endpoints: Endpoints) -> None:
    peer_url = f"http://127.0.0.1:{endpoints.ports['etcd-peer']}"
    start(
        "etcd",
        [
            str(bin_dir() / "etcd"),
            "--name=n0",
            f"--data-dir={layout.STATE / 'etcd'}",
            f"--listen-client-urls={endpoints.etcd}",
            f"--advertise-client-urls={endpoints.etcd}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=n0={peer_url}",
            "--unsafe-no-fsync",
            "--log-level=warn",
            "--quota-backend-bytes=8589934592",
        ],
    )
    wait_for("etcd health", lambda: http_ok(f"{endpoints.etcd}/health"), "etcd")


def start_apiserver(endpoints: Endpoints, args: argparse.Namespace) -> None:
    pki, server = endpoints.pki, endpoints.server
    apiserver = [
        str(bin_dir() / "kube-apiserver"),
        f"--etcd-servers={endpoints.etcd}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        # The advertised address is loopback, which the endpoint reconciler refuses.
        "--endpoint-reconciler-type=none",
        f"--secure-port={endpoints.ports['apiserver']}",
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
    gates = mode_gates(args.mode)
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


def mode_gates(mode: str) -> str:
    """The `--feature-gates` value of a mode (empty for plain)."""
    return ",".join(f"{gate}=true" for gate in MODE_GATES.get(mode, ()))


def start_controllers(endpoints: Endpoints, args: argparse.Namespace) -> None:
    """kube-controller-manager and kube-scheduler, both waited for."""
    common = [
        f"--kubeconfig={layout.KUBECONFIG}",
        f"--authentication-kubeconfig={layout.KUBECONFIG}",
        f"--authorization-kubeconfig={layout.KUBECONFIG}",
        "--bind-address=127.0.0.1",
        "--leader-elect=false",
        f"--kube-api-qps={CLIENT_QPS}",
        f"--kube-api-burst={CLIENT_BURST}",
    ]
    gates = mode_gates(args.mode)
    component_gates = [f"--feature-gates={gates}"] if args.mode == "native-gang" else []
    bins, pki, ports = bin_dir(), endpoints.pki, endpoints.ports
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
    for name, port in (
        ("kube-controller-manager", ports["controller-manager"]),
        ("kube-scheduler", ports["scheduler"]),
    ):
        url = f"https://127.0.0.1:{port}/healthz"
        wait_for(f"{name} /healthz", lambda url=url: insecure_ok(url), name)  # type: ignore[misc]


def start_kwok(endpoints: Endpoints, node_lease_seconds: int) -> None:
    kwok_config(layout.STATE / "kwok.yaml", node_lease_seconds)
    start(
        "kwok",
        [
            str(bin_dir() / "kwok"),
            f"--kubeconfig={layout.KUBECONFIG}",
            f"--config={layout.STATE / 'kwok.yaml'}",
            "--server-address=127.0.0.1:" + str(endpoints.ports["kwok"]),
        ],
    )


def register_nodes(nodes: Path, timeout: float) -> int:
    """Apply the Node objects of `nodes` and wait until KWOK has made each Ready (and
    the node controllers have lifted their not-ready taint), then for the default
    ServiceAccount; returns how many nodes there are."""
    kubectl = Kubectl(layout.KUBECONFIG)
    kubectl("apply", "-f", str(nodes))
    count = len(kubectl.json("get", "nodes")["items"])

    def nodes_ready() -> bool:
        items = kubectl.json("get", "nodes")["items"]
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

    wait_for(f"{count} simulated nodes Ready", nodes_ready, "kwok", timeout=timeout)
    wait_for(
        "the default ServiceAccount",
        lambda: kubectl("get", "serviceaccount", "default", "-n", "default").returncode == 0,
        "kube-controller-manager",
    )
    return count


def audit_flags(audit: bool) -> list[str]:
    """API server flags that log every request (see AUDIT_POLICY), when asked for."""
    if not audit:
        return []
    (layout.STATE / "audit-policy.yaml").write_text(AUDIT_POLICY)
    return [
        f"--audit-policy-file={layout.STATE / 'audit-policy.yaml'}",
        f"--audit-log-path={layout.STATE / 'logs' / 'audit.log'}",
        "--audit-log-format=json",
    ]


def grace_period_flags(node_lease_seconds: int) -> list[str]:
    """With longer node Leases, the controller-manager waits a whole Lease for renewal."""
    if node_lease_seconds == DEFAULT_NODE_LEASE_SECONDS:
        return []
    return [f"--node-monitor-grace-period={node_lease_seconds + 10}s"]


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
    env = {**os.environ, "MUSTER_CLUSTER_DIR": str(layout.STATE)}
    command = [sys.executable, "-m", "hack.kueue", "up"]
    if pods_ready_timeout is not None:
        command.append(f"--pods-ready-timeout={pods_ready_timeout}")
    subprocess.run(command, check=True, cwd=ROOT, env=env)
