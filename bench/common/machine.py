"""A description of the machine a benchmark ran on, for the results file."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from devtools.builds import versions


def describe() -> dict[str, object]:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = next(
        (line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if "model name" in line),
        platform.processor() or "unknown",
    )
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    total_kib = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal:"))
    pinned = versions()
    return {
        "cpu_model": model,
        "cpus": os.cpu_count(),
        "memory_gib": round(total_kib / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "kubernetes": pinned.get("KUBE_VERSION"),
        "etcd": pinned.get("ETCD_VERSION"),
        "kwok": pinned.get("KWOK_VERSION"),
    }
