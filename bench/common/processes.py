"""CPU time and memory of a running process, read from /proc (Linux only).

The benchmark samples each control-plane process and the operator before and after
the burst, so CPU seconds are those spent on the workload, and reads the kernel's
high-water mark of resident memory (``VmHWM``) for the peak: no sampling can miss it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Usage:
    """A process's CPU seconds so far (user + system) and its peak and current RSS."""

    cpu_seconds: float
    peak_rss_bytes: int
    rss_bytes: int


def usage(pid: int) -> Usage:
    stat = Path(f"/proc/{pid}/stat").read_text()
    # Fields after the command name, which is parenthesised and may contain spaces.
    fields = stat[stat.rindex(")") + 2 :].split()
    user_ticks, system_ticks = int(fields[11]), int(fields[12])
    memory = _status_kib(pid)
    return Usage(
        cpu_seconds=(user_ticks + system_ticks) / _TICKS_PER_SECOND,
        peak_rss_bytes=memory["VmHWM"] * 1024,
        rss_bytes=memory["VmRSS"] * 1024,
    )


def _status_kib(pid: int) -> dict[str, int]:
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            values[key] = int(rest.split()[0])
    return values


def spent(before: dict[str, Usage], after: dict[str, Usage]) -> dict[str, dict[str, float]]:
    """CPU seconds each process spent between two readings, and its peak memory so far."""
    return {
        name: {
            "cpu_seconds": round(after[name].cpu_seconds - before[name].cpu_seconds, 2),
            "peak_rss_mib": round(after[name].peak_rss_bytes / 2**20, 1),
        }
        for name in after
    }
