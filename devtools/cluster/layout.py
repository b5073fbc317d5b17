"""Where the local control plane keeps its state, what it runs, and how it speaks.

State lives in `.cluster/` of the checkout (`MUSTER_CLUSTER_DIR` elsewhere): kubeconfig,
PKI, logs, pids and each component's command line. Other modules read `layout.STATE`
through this module, so that a caller (or a test) may point it elsewhere.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from devtools.builds import HACK, ROOT

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


def log(message: str) -> None:
    print(f"[cluster] {message}", flush=True)


def run(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=True, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload, no-any-return]
