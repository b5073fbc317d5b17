"""Where the checkout is, which versions are pinned, and where `hack/build.sh` puts what
it builds (the one place each is read)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HACK = ROOT / "hack"


def versions() -> dict[str, str]:
    """Read the pinned component versions from versions.env (the one place they live);
    KUBE_VERSION from the environment wins over its default, as in build.sh."""
    pairs = {}
    for line in (HACK / "versions.env").read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            pairs[key.strip()] = value.strip()
    pairs["KUBE_VERSION"] = os.environ.get("KUBE_VERSION") or pairs["KUBE_VERSION"]
    return pairs


def supported_versions() -> list[str]:
    """The Kubernetes versions `make test-versions` runs on (versions.env)."""
    return versions()["SUPPORTED_KUBE_VERSIONS"].split(",")


def cache_dir() -> Path:
    """Where `build.sh` keeps what it builds."""
    return Path(os.environ.get("MUSTER_CACHE", Path.home() / ".cache" / "muster"))


def bin_dir() -> Path:
    return cache_dir() / "k8s" / versions()["KUBE_VERSION"] / "bin"
