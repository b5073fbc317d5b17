"""helm, built from its Go module like the control plane, and the chart rendered with it.

charts/muster is where the installation is defined; manifests/ is rendered from it
(hack/manifests.py) and the tests install it with this helm. `hack/build.sh` builds
it into the cache beside the control plane (`--helm-only` builds nothing else), so a
machine without a container engine or downloaded binaries has it too.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from devtools.builds import HACK, ROOT, cache_dir, versions

CHART = ROOT / "charts" / "muster"
RELEASE = "muster"
NAMESPACE = "muster-system"
# The values that give the cert-manager variant of the installation.
CERT_MANAGER = ("certManager.enabled=true",)


def binary() -> Path:
    return cache_dir() / "helm" / versions()["HELM_VERSION"] / "bin" / "helm"


def ensure() -> Path:
    """The helm binary, built first on a machine that has none yet (once)."""
    if not binary().exists():
        subprocess.run([str(HACK / "build.sh"), "--helm-only"], check=True)
    return binary()


def helm(*args: str, kubeconfig: Path | None = None) -> str:
    """helm's output; a failure raises with its stderr."""
    command = [str(ensure()), *args]
    if kubeconfig is not None:
        command.append(f"--kubeconfig={kubeconfig}")
    answer = subprocess.run(command, capture_output=True, text=True, check=False)
    if answer.returncode != 0:
        raise RuntimeError(f"helm {' '.join(args)} failed:\n{answer.stderr}")
    return answer.stdout


def sets(values: tuple[str, ...]) -> list[str]:
    """`--set` arguments, one per `path=value`."""
    return [f"--set={value}" for value in values]


def template(
    *values: str, release: str = RELEASE, namespace: str = NAMESPACE, chart: Path = CHART
) -> str:
    """The chart rendered with its CRDs, as `helm install` would create it, with
    `values` (`path=value`) over the defaults."""
    return helm(
        "template", release, str(chart), f"--namespace={namespace}", "--include-crds",
        *sets(values),
    )  # fmt: skip
