"""A local control plane as an object: one a run starts (and stops), or one it is handed.

Each is a state directory that `hack/cluster.py` manages (`MUSTER_CLUSTER_DIR`); the
e2e tests, the soak and the benchmarks all start theirs through it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from devtools.builds import HACK, ROOT
from devtools.cluster.layout import COMPONENTS, KUEUE


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

    @property
    def audit_log(self) -> Path:
        """Where the API server logs every request, when started with `--audit`."""
        return self.state_dir / "logs" / "audit.log"

    def component_pids(self) -> dict[str, int]:
        """The control plane's processes, and Kueue's manager where it runs."""
        pids = self.state_dir / "pids"
        names = [*COMPONENTS, *([KUEUE] if (pids / f"{KUEUE}.pid").exists() else [])]
        return {name: int((pids / f"{name}.pid").read_text()) for name in names}
