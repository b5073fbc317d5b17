"""The processes a benchmark run needs: a local control plane per mode, and the operator.

Each mode gets a fresh control plane of its own (devtools/cluster/local.py, with the
audit log on, and Kueue's manager for the Kueue modes), so no mode inherits
another's objects, caches or etcd history. The Muster modes also run `muster run` as
a child process (devtools/operator.py), whose CPU and memory are then read from /proc
and whose scheduling-cycle histogram is read from its /metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from devtools.builds import ROOT
from devtools.cluster.control_plane import CLIENT_BURST, CLIENT_QPS
from devtools.cluster.local import LocalCluster
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess, WebhookService
from prometheus_client.parser import text_string_to_metric_families

from bench.e2e import kueue
from bench.e2e.workload import KUEUE_MODES, Mode

CLUSTER_FLAGS: dict[Mode, tuple[str, ...]] = {
    "plain": (),
    "floor": (),
    # Muster runs where native gang scheduling is off: what its users have.
    "muster": (),
    "native": ("--native-gang",),
    "kueue": ("--kueue",),
    "kueue-muster": ("--kueue",),
}


def cluster_up(
    state_dir: Path,
    *,
    nodes_file: Path,
    mode: Mode,
    nodes_timeout: float,
    node_lease_seconds: int,
    kueue_pods_ready_timeout: str = kueue.PODS_READY_TIMEOUT,
) -> LocalCluster:
    """A fresh control plane for ``mode``: whatever ran in ``state_dir`` is stopped first.

    With Kueue, ``kueue_pods_ready_timeout`` is its waitForPodsReady timeout.
    """
    kueue_flags = [f"--kueue-pods-ready-timeout={kueue_pods_ready_timeout}"]
    cluster = LocalCluster(state_dir / "kubeconfig", started_here=True, state_dir=state_dir)
    cluster.hack("down")
    return LocalCluster.start(
        state_dir,
        "--audit",
        f"--nodes={nodes_file}",
        f"--nodes-timeout={nodes_timeout}",
        f"--node-lease-seconds={node_lease_seconds}",
        *CLUSTER_FLAGS[mode],
        *(kueue_flags if mode in KUEUE_MODES else []),
    )


def cluster_down(cluster: LocalCluster) -> None:
    cluster.hack("down")


def start_operator(
    cluster: LocalCluster, log_path: Path, flags: Sequence[str] = ()
) -> OperatorProcess:
    """`muster run` against one cluster, alone (no leader election), logging to a file,
    ready when this returns; ``flags`` are added to its command line.

    Only the CRDs are installed: the operator runs with the admin's kubeconfig and no
    webhooks, so that the burst measures scheduling, not admission.
    """
    kubectl = Kubectl(cluster.kubeconfig)
    kubectl("apply", "-f", str(ROOT / "crds"))
    kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s", timeout=90)
    installation = WebhookService(
        kubeconfig=cluster.kubeconfig,
        credentials=cluster.kubeconfig,
        settings={},
        flags=(
            "--no-leader-election",
            "--log-level=warning",
            # The client-side rate limit the control plane's own clients have here.
            f"--kube-qps={CLIENT_QPS}",
            f"--kube-burst={CLIENT_BURST}",
        ),
    )
    operator = OperatorProcess(
        service=installation,
        log_path=log_path,
        identity="muster-bench",
        flags=tuple(flags),
        ready_timeout=120.0,
    )
    operator.start()
    return operator


def cycle_figures(metrics_text: str, since: str = "") -> dict[str, float | int | None]:
    """Count, mean and p99 bound of `muster_cycle_duration_seconds` in Prometheus text,
    the cycles already counted in the earlier text ``since`` left out."""
    total, count, buckets = _cycle_histogram(metrics_text)
    total_before, count_before, buckets_before = _cycle_histogram(since)
    total, count = total - total_before, count - count_before
    buckets = {bound: value - buckets_before.get(bound, 0) for bound, value in buckets.items()}
    p99_bound = next(
        (bound for bound, cumulative in sorted(buckets.items()) if cumulative >= 0.99 * count),
        None,
    )
    return {
        "cycles": count,
        "total_s": round(total, 3),
        "mean_s": round(total / count, 4) if count else None,
        "p99_at_most_s": p99_bound if count else None,
    }


def _cycle_histogram(metrics_text: str) -> tuple[float, int, dict[float, float]]:
    """Sum, count and cumulative buckets (by bound) of the cycle histogram."""
    total, count = 0.0, 0
    buckets: dict[float, float] = {}
    for family in text_string_to_metric_families(metrics_text):
        if family.name != "muster_cycle_duration_seconds":
            continue
        for sample in family.samples:
            if sample.name.endswith("_sum"):
                total = float(sample.value)
            elif sample.name.endswith("_count"):
                count = int(sample.value)
            elif sample.name.endswith("_bucket"):
                buckets[float(sample.labels["le"])] = float(sample.value)
    return total, count, buckets


def rollback_count(metrics_text: str) -> int:
    """`muster_rollbacks_total` in Prometheus text (0 before the first)."""
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name == "muster_rollbacks_total":
                return int(sample.value)
    return 0
