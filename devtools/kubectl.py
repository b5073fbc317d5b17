"""The kubectl built with the control plane, bound to one kubeconfig.

Every tool and test goes through it, so the kubectl used is always the one of the
cluster's version (the machine's own may be far outside the supported version skew).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devtools.builds import bin_dir
from devtools.waiting import wait_until

# How long undoing a fault may keep trying: past an API server's or etcd's restart.
PERSIST_SECONDS = 120.0


class KubectlError(AssertionError):
    """kubectl exited non-zero. An AssertionError, so that in a test it fails the test
    with kubectl's own words; a tool lets it end the command the same way."""

    def __init__(self, args: tuple[str, ...], result: subprocess.CompletedProcess[str]) -> None:
        super().__init__(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        self.returncode = result.returncode
        self.stderr = result.stderr


@dataclass(frozen=True)
class Kubectl:
    """kubectl bound to one kubeconfig; raises `KubectlError` with its stderr on failure."""

    kubeconfig: Path

    def __call__(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            self.command(*args),
            check=False,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise KubectlError(args, result)
        return result

    def command(self, *args: str) -> list[str]:
        """The command line, for a caller that runs it itself (a watch it reads as it
        goes, a probe that must not raise)."""
        return [str(bin_dir() / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args]

    def persist(self, *args: str, input: str | None = None) -> None:
        """Run until kubectl succeeds, for up to PERSIST_SECONDS: for undoing a fault,
        which must land even when the API server is restarting at that moment (a fault
        left in place outlives its plan, unseen)."""

        def landed() -> bool:
            try:
                return self(*args, input=input, check=False, timeout=30).returncode == 0
            except subprocess.TimeoutExpired:
                return False

        wait_until(f"kubectl {' '.join(args)}", landed, timeout=PERSIST_SECONDS, interval=1.0)

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
