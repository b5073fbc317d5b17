"""`make run`: Muster on the dev cluster, installed as the manifests install it.

Installs the manifests (hack/installed.py), starts `muster run` in the background as
the ServiceAccount muster-system/muster-operator, waits until it is ready, and says
where its log is, how to stop it and which kubectl to use. `--stop` stops it, takes
away what it installed but the namespace and the CRDs (so that the chart installs
there next: `installed.uninstall`) and puts back the warning that Muster is absent;
`make cluster-down` stops it too. `make run IMAGE=1` (`--image`) runs the image
instead, as the chart's Deployment runs it (hack/container.py).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from hack import cluster, container, installed

OPERATOR_KUBECONFIG = cluster.STATE / "muster-operator.kubeconfig"
HEALTH_PORT = cluster.STATE / "muster-health-port"
SERVICE_ACCOUNT = cluster.STATE / "muster-serviceaccount"
IDENTITY = "muster-local"


def container_name() -> str:
    """The container of `--image`: named for the dev cluster's directory, since podman's
    names are the machine's, and another checkout's dev cluster may run one too."""
    digest = hashlib.sha256(str(cluster.STATE.resolve()).encode()).hexdigest()[:8]
    return f"{IDENTITY}-{digest}"


def muster_command() -> Path:
    return Path(sys.executable).parent / "muster"


def ready() -> bool:
    try:
        port = HEALTH_PORT.read_text().strip()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def start_muster(*, image: bool = False) -> None:
    """Install Muster and start it, unless it runs already; return once it is ready.
    With `image`, the image `make image` built, run with podman as the Deployment runs
    it (hack/container.py), instead of a local process."""
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
    if image:
        # podman passes the SIGTERM of `make run-stop` on to the operator.
        run = container.ImageRun.prepared(cluster.KUBECONFIG, container.image(), SERVICE_ACCOUNT)
        command = run.command(
            name=container_name(),
            environment=container.local_environment(
                cluster.KUBECONFIG,
                settings,
                webhook_port=webhook_port,
                health_port=health_port,
                identity=IDENTITY,
            ),
        )
    else:
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


def start(*, image: bool) -> None:
    start_muster(image=image)
    log = cluster.STATE / "logs" / f"{cluster.MUSTER}.log"
    print(
        f"""
Muster runs on the dev cluster as {installed.USER}.
  its log:   tail -f {log}
  stop it:   make run-stop    (make cluster-down stops everything)
Put `muster` (and `kubectl muster`) on the PATH, and the kubectl built with the
cluster first (the machine's own may be far older):
  export PATH={muster_command().parent}:{cluster.bin_dir()}:$PATH KUBECONFIG={cluster.KUBECONFIG}
Then: kubectl apply -f examples/training-job.yaml && kubectl get podgroups -w"""
    )


def stop() -> None:
    cluster.stop(cluster.MUSTER)
    if shutil.which("podman"):  # the container of `--image`, should it outlive its podman
        subprocess.run(["podman", "rm", "--force", "--ignore", container_name()], check=False)
    (cluster.STATE / "pids" / f"{cluster.MUSTER}.pid").unlink(missing_ok=True)
    if cluster.healthy():
        installed.uninstall(cluster.KUBECONFIG)
        cluster.kubectl("apply", "-f", str(cluster.MUSTER_ABSENT))
    cluster.log("Muster stopped")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stop", action="store_true", help="stop Muster")
    parser.add_argument(
        "--image",
        action="store_true",
        help="run the image `make image` built, with podman, as the Deployment runs it",
    )
    args = parser.parse_args()
    started = time.monotonic()
    stop() if args.stop else start(image=args.image)
    cluster.log(f"done in {time.monotonic() - started:.1f}s")


if __name__ == "__main__":
    main()
