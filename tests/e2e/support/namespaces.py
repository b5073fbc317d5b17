"""Access to the real local control plane the e2e tests run against.

Every test that talks to Kubernetes goes through these helpers, so the kubectl
used is always the one built with the cluster (the machine's own may be far outside
the supported version skew).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hack.cluster import HACK, ROOT, bin_dir

__all__ = [
    "POLL_CHECKS",
    "ROOT",
    "Kubectl",
    "LocalCluster",
    "bin_dir",
    "fresh_namespace",
    "wait_until",
]

# Checks every `wait_until` poll runs first; each raises to fail the waiting test (the
# gang observer registers one, so a partial gang fails a test the moment it is seen).
POLL_CHECKS: list[Callable[[], None]] = []


@dataclass(frozen=True)
class Kubectl:
    """kubectl bound to one kubeconfig; raises with kubectl's stderr on failure."""

    kubeconfig: Path

    def __call__(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(bin_dir() / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            check=False,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}"
            )
        return result

    def json(self, *args: str) -> Any:
        """`kubectl get ... -o json`, parsed."""
        return json.loads(self(*args, "-o", "json").stdout)

    def serves(self, group_version: str) -> bool:
        """Whether the API server serves `group_version` (`resource.k8s.io/v1`)."""
        return self("get", "--raw", f"/apis/{group_version}", check=False).returncode == 0

    def apply(self, manifest: Mapping[str, Any] | str, namespace: str | None = None) -> None:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        ns = ["-n", namespace] if namespace else []
        self("apply", *ns, "-f", "-", input=text)


def wait_until(
    what: str, check: Callable[[], bool], timeout: float = 60.0, interval: float = 0.25
) -> None:
    """Poll until `check()` holds; the failure names what was awaited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for standing in list(POLL_CHECKS):
            standing()
        if check():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


@dataclass(frozen=True)
class LocalCluster:
    """A control plane this test run started (and stops), or one it was handed."""

    kubeconfig: Path
    started_here: bool
    state_dir: Path

    @classmethod
    def acquire(cls) -> LocalCluster:
        given = os.environ.get("MUSTER_KUBECONFIG")
        if given:
            return cls(Path(given), started_here=False, state_dir=Path(given).parent)
        state = Path(os.environ.get("MUSTER_E2E_CLUSTER_DIR", ROOT / ".cluster-e2e"))
        # The API server keeps the Job `spec.scheduling` field, so the native-field tests
        # run; Kueue runs beside it for the tests of Muster with Kueue. A run of a few
        # tests that need no Kueue (hack/versions.py) asks for other flags; the version
        # is KUBE_VERSION's, as for every cluster (hack/cluster.py).
        flags = os.environ.get("MUSTER_E2E_CLUSTER_FLAGS", "--job-scheduling-field --kueue")
        return cls.at(state, *flags.split())

    @classmethod
    def at(cls, state: Path, *flags: str) -> LocalCluster:
        """The cluster in `state`: one another run started there is used, and left to its
        owner; otherwise one of this run's own, started with `cluster.py up` flags."""
        env = {**os.environ, "MUSTER_CLUSTER_DIR": str(state)}
        status = [sys.executable, str(HACK / "cluster.py"), "status"]
        if subprocess.run(status, env=env, capture_output=True, check=False).returncode == 0:
            return cls(state / "kubeconfig", started_here=False, state_dir=state)
        return cls.start(state, *flags)

    def hack(self, *args: str) -> None:
        """Run `hack/cluster.py` on this cluster (e.g. `restart kube-apiserver`)."""
        env = {**os.environ, "MUSTER_CLUSTER_DIR": str(self.state_dir)}
        subprocess.run(
            [sys.executable, str(HACK / "cluster.py"), *args],
            check=True,
            env=env,
            capture_output=True,
            timeout=180,
        )

    @classmethod
    def start(cls, state: Path, *flags: str) -> LocalCluster:
        """A control plane of this run's own in `state`, started with `cluster.py up` flags."""
        env = {**os.environ, "MUSTER_CLUSTER_DIR": str(state)}
        subprocess.run(
            [sys.executable, str(HACK / "cluster.py"), "up", *flags], check=True, env=env
        )
        return cls(state / "kubeconfig", started_here=True, state_dir=state)

    def release(self) -> None:
        if not self.started_here or os.environ.get("MUSTER_KEEP_CLUSTER"):
            return
        env = {**os.environ, "MUSTER_CLUSTER_DIR": str(self.state_dir)}
        subprocess.run([sys.executable, str(HACK / "cluster.py"), "down"], check=True, env=env)


def namespace_for(test_name: str) -> str:
    """A DNS-label namespace name that says which test made it."""
    stem = re.sub(r"[^a-z0-9-]+", "-", test_name.lower()).strip("-")[:40].rstrip("-")
    return f"{stem}-{uuid.uuid4().hex[:5]}"


def fresh_namespace(kubectl: Kubectl, test_name: str) -> Iterator[str]:
    name = namespace_for(test_name)
    kubectl("create", "namespace", name)
    wait_until(
        f"the default ServiceAccount in {name}",
        lambda: (
            kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode == 0
        ),
    )
    yield name
    kubectl("delete", "namespace", name, "--wait=false", check=False)
