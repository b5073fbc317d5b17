"""The processes a benchmark run needs: a local control plane per mode, and the operator.

Each mode gets a fresh control plane of its own (from `hack/cluster.py`, with the
audit log on, and Kueue's manager for the Kueue modes), so no mode inherits
another's objects, caches or etcd history. The Muster modes also run `muster run` as
a child process, whose CPU and memory are then read from /proc and whose
scheduling-cycle histogram is read from its /metrics.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hack.cluster import CLIENT_BURST, CLIENT_QPS, COMPONENTS, HACK, KUEUE, ROOT, bin_dir, free_port
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


@dataclass(frozen=True, slots=True)
class Cluster:
    """A running local control plane, known by its state directory."""

    state_dir: Path

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def audit_log(self) -> Path:
        return self.state_dir / "logs" / "audit.log"

    def component_pids(self) -> dict[str, int]:
        """The control plane's processes, and Kueue's manager where it runs."""
        pids = self.state_dir / "pids"
        names = [*COMPONENTS, *([KUEUE] if (pids / f"{KUEUE}.pid").exists() else [])]
        return {name: int((pids / f"{name}.pid").read_text()) for name in names}

    def kubectl(self, *args: str) -> None:
        subprocess.run(
            [str(bin_dir() / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            check=True,
            capture_output=True,
        )


def _cluster_command(state_dir: Path, *args: str) -> None:
    env = {**os.environ, "MUSTER_CLUSTER_DIR": str(state_dir)}
    subprocess.run([sys.executable, str(HACK / "cluster.py"), *args], check=True, env=env)


def cluster_up(
    state_dir: Path,
    *,
    nodes_file: Path,
    mode: Mode,
    nodes_timeout: float,
    node_lease_seconds: int,
    kueue_pods_ready_timeout: str = kueue.PODS_READY_TIMEOUT,
) -> Cluster:
    """A fresh control plane for ``mode``: whatever ran in ``state_dir`` is stopped first.

    With Kueue, ``kueue_pods_ready_timeout`` is its waitForPodsReady timeout.
    """
    kueue_flags = [f"--kueue-pods-ready-timeout={kueue_pods_ready_timeout}"]
    _cluster_command(state_dir, "down")
    _cluster_command(
        state_dir,
        "up",
        "--audit",
        f"--nodes={nodes_file}",
        f"--nodes-timeout={nodes_timeout}",
        f"--node-lease-seconds={node_lease_seconds}",
        *CLUSTER_FLAGS[mode],
        *(kueue_flags if mode in KUEUE_MODES else []),
    )
    return Cluster(state_dir)


def cluster_down(cluster: Cluster) -> None:
    _cluster_command(cluster.state_dir, "down")


class OperatorProcess:
    """`muster run` against one cluster, alone (no leader election), logging to a file;
    ``flags`` are added to its command line."""

    def __init__(self, cluster: Cluster, log_path: Path, flags: Sequence[str] = ()) -> None:
        self.cluster = cluster
        self.log_path = log_path
        self.flags = tuple(flags)
        self.health_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("the operator is not running")
        return self.process.pid

    def start(self, timeout: float = 120.0) -> None:
        """Install the CRDs, start the operator and wait until it is ready."""
        self.cluster.kubectl("apply", "-f", str(ROOT / "crds"))
        self.cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        command = [
            str(Path(sys.executable).parent / "muster"),
            "run",
            f"--kubeconfig={self.cluster.kubeconfig}",
            f"--webhook-port={free_port()}",
            "--health-host=127.0.0.1",
            f"--health-port={self.health_port}",
            "--no-leader-election",
            "--log-level=warning",
            # The client-side rate limit the control plane's own clients have here.
            f"--kube-qps={CLIENT_QPS}",
            f"--kube-burst={CLIENT_BURST}",
            *self.flags,
        ]
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + timeout
        while not self._ready():
            if self.process.poll() is not None:
                code = self.process.returncode
                raise RuntimeError(f"muster run exited ({code}); see {self.log_path}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"muster run not ready in {timeout:.0f}s; see {self.log_path}")
            time.sleep(0.5)

    def exit_code(self) -> int | None:
        """None while the operator runs; its exit status (negative: a signal) once it ended."""
        return None if self.process is None else self.process.poll()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def cycle_seconds(self, since: str = "") -> dict[str, float | int | None]:
        """The operator's scheduling cycles, from its /metrics histogram, those already
        counted in ``since`` (an earlier reading of `metrics`) left out.

        The histogram keeps buckets, not samples: the p99 is known only as the bucket
        bound it falls under.
        """
        return cycle_figures(self.metrics(), since)

    def rollbacks(self) -> int:
        """Gangs the operator rolled back (`muster_rollbacks_total`): each one a gang
        that started in part and was taken down."""
        for family in text_string_to_metric_families(self.metrics()):
            if family.name == "muster_rollbacks":
                return int(
                    sum(sample.value for sample in family.samples if sample.name.endswith("_total"))
                )
        return 0

    def metrics(self) -> str:
        with urllib.request.urlopen(self._url("/metrics"), timeout=5) as response:
            return str(response.read().decode())

    def _url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.health_port}{path}"

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self._url("/readyz"), timeout=2) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False


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
