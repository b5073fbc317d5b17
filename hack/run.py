"""`make run`: Muster on the dev cluster, installed as the manifests install it.

Installs the manifests (hack/installed.py), starts `muster run` in the background as
the ServiceAccount muster-system/muster-operator, waits until it is ready, and says
where its log is, how to stop it and which kubectl to use. `--stop` stops it, takes
its webhook configurations away and puts back the warning that Muster is absent;
`make cluster-down` stops it too.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import urllib.request
from pathlib import Path

from hack import cluster, installed

OPERATOR_KUBECONFIG = cluster.STATE / "muster-operator.kubeconfig"
HEALTH_PORT = cluster.STATE / "muster-health-port"
IDENTITY = "muster-local"


def muster_command() -> Path:
    return Path(sys.executable).parent / "muster"


def ready() -> bool:
    try:
        port = HEALTH_PORT.read_text().strip()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def start_muster() -> None:
    """Install Muster and start it, unless it runs already; return once it is ready."""
    if cluster.alive(cluster.pid_of(cluster.MUSTER)):
        cluster.log("Muster is already running")
        return
    (cluster.STATE / "pids" / f"{cluster.MUSTER}.pid").unlink(missing_ok=True)
    if not cluster.healthy():
        raise SystemExit("the dev cluster is not up: run `make cluster-up` first")
    webhook_port, health_port = cluster.free_port(), cluster.free_port()
    cluster.log("installing Muster's manifests (CRDs, RBAC, pod-rights policy, webhooks)")
    settings = installed.install(cluster.KUBECONFIG, f"https://127.0.0.1:{webhook_port}")
    installed.service_account_kubeconfig(cluster.KUBECONFIG, OPERATOR_KUBECONFIG)
    HEALTH_PORT.write_text(f"{health_port}\n")
    command = [
        str(muster_command()),
        "run",
        f"--kubeconfig={OPERATOR_KUBECONFIG}",
        "--webhook-host=127.0.0.1",
        f"--webhook-port={webhook_port}",
        "--health-host=127.0.0.1",
        f"--health-port={health_port}",
        f"--identity={IDENTITY}",
    ]
    cluster.start(cluster.MUSTER, command, env={**os.environ, **settings})
    cluster.wait_for("Muster to be ready", ready, cluster.MUSTER, timeout=90)


def start() -> None:
    start_muster()
    log = cluster.STATE / "logs" / f"{cluster.MUSTER}.log"
    print(
        f"""
Muster runs on the dev cluster as {installed.USER}.
  its log:   tail -f {log}
  stop it:   make run-stop    (make cluster-down stops everything)
Use the kubectl built with the cluster (the machine's own may be far older):
  export PATH={cluster.bin_dir()}:$PATH KUBECONFIG={cluster.KUBECONFIG}
Then: kubectl apply -f examples/training-job.yaml && kubectl get podgroups -w"""
    )


def stop() -> None:
    cluster.stop(cluster.MUSTER)
    (cluster.STATE / "pids" / f"{cluster.MUSTER}.pid").unlink(missing_ok=True)
    if cluster.healthy():
        installed.remove_webhooks(cluster.KUBECONFIG)
        cluster.kubectl("apply", "-f", str(cluster.MUSTER_ABSENT))
    cluster.log("Muster stopped")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stop", action="store_true", help="stop Muster")
    args = parser.parse_args()
    started = time.monotonic()
    stop() if args.stop else start()
    cluster.log(f"done in {time.monotonic() - started:.1f}s")


if __name__ == "__main__":
    main()
