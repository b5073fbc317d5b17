"""`make run`: Muster on the dev cluster, installed as the manifests install it.

Installs the manifests (devtools/installed.py), starts `muster run` in the background as
the ServiceAccount muster-system/muster-operator, waits until it is ready, and says
where its log is, how to stop it and which kubectl to use. `--stop` stops it, takes
away what it installed but the namespace and the CRDs (so that the chart installs
there next: `installed.uninstall`) and puts back the warning that Muster is absent;
`make cluster-down` stops it too. `make run IMAGE=1` (`--image`) runs the image
instead, as the chart's Deployment runs it (devtools/container.py).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

from devtools import container, installed
from devtools.builds import bin_dir
from devtools.cluster import commands, layout, processes
from devtools.cluster.layout import MUSTER, MUSTER_ABSENT, log
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess, WebhookService

IDENTITY = "muster-local"


def operator_kubeconfig() -> Path:
    return layout.STATE / "muster-operator.kubeconfig"


def service_account() -> Path:
    return layout.STATE / "muster-serviceaccount"


def container_name() -> str:
    """The container of `--image`: named for the dev cluster's directory, since podman's
    names are the machine's, and another checkout's dev cluster may run one too."""
    digest = hashlib.sha256(str(layout.STATE.resolve()).encode()).hexdigest()[:8]
    return f"{IDENTITY}-{digest}"


def muster_command() -> Path:
    return Path(sys.executable).parent / "muster"


def start_muster(*, image: bool = False) -> None:
    """Install Muster and start it, unless it runs already; return once it is ready.
    With `image`, the image `make image` built, run with podman as the Deployment runs
    it (devtools/container.py), instead of a local process. The replica is the
    launcher's (devtools/operator.py), started detached as a component of the dev
    cluster, so that `make cluster-down` stops it too; the webhook configurations call
    it directly, as its only endpoint."""
    if processes.alive(processes.pid_of(MUSTER)):
        log("Muster is already running")
        return
    (layout.STATE / "pids" / f"{MUSTER}.pid").unlink(missing_ok=True)
    if not commands.healthy():
        raise SystemExit("the dev cluster is not up: run `make cluster-up` first")
    kubeconfig = layout.KUBECONFIG
    service = WebhookService(kubeconfig=kubeconfig, credentials=operator_kubeconfig(), settings={})
    replica = OperatorProcess(
        service=service,
        log_path=layout.STATE / "logs" / f"{MUSTER}.log",
        identity=IDENTITY,
        name=container_name(),
    )
    log("installing Muster's manifests (CRDs, RBAC, pod-rights policy, webhooks)")
    url = f"https://127.0.0.1:{replica.webhook_port}"
    service.settings = installed.install(kubeconfig, url)
    installed.service_account_kubeconfig(kubeconfig, service.credentials)
    if image:
        # podman passes the SIGTERM of `make run-stop` on to the operator.
        replica.image = container.ImageRun.prepared(
            kubeconfig, container.image(), service_account()
        )
    processes.start(MUSTER, replica.command(), env=replica.environment())
    processes.wait_for("Muster to be ready", replica.says_ready, MUSTER, timeout=90)


def start(*, image: bool) -> None:
    start_muster(image=image)
    log_path = layout.STATE / "logs" / f"{MUSTER}.log"
    print(
        f"""
Muster runs on the dev cluster as {installed.USER}.
  its log:   tail -f {log_path}
  stop it:   make run-stop    (make cluster-down stops everything)
Put `muster` (and `kubectl muster`) on the PATH, and the kubectl built with the
cluster first (the machine's own may be far older):
  export PATH={muster_command().parent}:{bin_dir()}:$PATH KUBECONFIG={layout.KUBECONFIG}
Then: kubectl apply -f examples/training-job.yaml && kubectl get podgroups -w"""
    )


def stop() -> None:
    processes.stop(MUSTER)
    if shutil.which("podman"):  # the container of `--image`, should it outlive its podman
        subprocess.run(["podman", "rm", "--force", "--ignore", container_name()], check=False)
    (layout.STATE / "pids" / f"{MUSTER}.pid").unlink(missing_ok=True)
    if commands.healthy():
        installed.uninstall(layout.KUBECONFIG)
        Kubectl(layout.KUBECONFIG)("apply", "-f", str(MUSTER_ABSENT))
    log("Muster stopped")


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
    log(f"done in {time.monotonic() - started:.1f}s")


if __name__ == "__main__":
    main()
