"""bench/results/memory.json as a table in docs/performance.md.

One column per variant (a revision measured side by side), one row per part of what
the operator keeps, and the ratio of the last variant to the first.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.common.sections import DOCS, ROOT, begin_marker, end_marker, replace_section

NAME = "memory.json"
RESULTS = ROOT / "bench" / "results" / NAME

PARTS = (
    ("imports", "the interpreter and the operator's libraries"),
    ("nodes", "+ {nodes:,} nodes"),
    ("workloads", "+ {gangs:,} Workloads (admission's copy)"),
    ("pod_groups", "+ {gangs:,} admitted PodGroups"),
    ("pods", "+ {pods:,} gated member pods, through both pod views"),
    ("tls_connections", "+ {connections} TLS connections, both ends"),
)


def _ratio(first: float, last: float) -> str:
    return f"{last / first:.2f}x" if first else "-"


def render(results: Mapping[str, Any]) -> str:
    params = results["parameters"]
    variants: Mapping[str, Any] = results["variants"]
    names = list(variants)
    compare = len(names) > 1
    header = "| RSS (MiB) | " + " | ".join(names) + (" | ratio |" if compare else " |")
    rule = "|---|" + "---:|" * (len(names) + compare)
    rows = []
    for key, label in (*PARTS, ("total", "total")):
        values = [
            figures["total_mib"] if key == "total" else figures["rss_mib"].get(key, 0.0)
            for figures in variants.values()
        ]
        cells = [f"{value:,.1f}" for value in values]
        if compare:
            cells.append(_ratio(values[0], values[-1]))
        rows.append(f"| {label.format(**params)} | " + " | ".join(cells) + " |")
    per_pod = [figures["pod_bytes"] for figures in variants.values()]
    cells = [f"{value:,}" for value in per_pod] + ([_ratio(per_pod[0], per_pod[-1])] * compare)
    rows.append("| a pod (bytes) | " + " | ".join(cells) + " |")
    machine = results["machine"]
    return "\n".join(
        [
            begin_marker(NAME),
            "",
            f"Measured {results['date']} on {machine['cpus']} x {machine['cpu_model']}, "
            f"Python {machine['python']}; each variant in a fresh process, RSS after each "
            "part (`bench/memory/run.py`).",
            "",
            header,
            rule,
            *rows,
            "",
            end_marker(NAME),
        ]
    )


def write(results: Mapping[str, Any], docs: Path = DOCS) -> None:
    """The section of memory.json in `docs`."""
    replace_section(NAME, render(results), docs)
