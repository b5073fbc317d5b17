"""bench/results/levels-e2e.json as a table in docs/performance.md.

One column per system, measured side by side in one run; one row per figure of
bench/levels.py's `placement`, and the time from a Job's creation to all its pods
bound.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.sections import DOCS, ROOT, begin_marker, end_marker, replace_section

NAME = "levels-e2e.json"
RESULTS = ROOT / "bench" / "results" / NAME
TITLES = {"muster": "Muster", "kueue": "Kueue alone (TAS)"}

Figures = Mapping[str, Any]


def _of(part: str) -> Callable[[Figures], str]:
    def cell(figures: Figures) -> str:
        counts = figures["placement"][part]
        share = counts["share"]
        percent = f" ({share:.0%})" if share is not None else ""
        return f"{counts['placed']} of {counts['could']}{percent}"

    return cell


def _narrowest(figures: Figures) -> str:
    counts, gangs = figures["placement"]["at_narrowest_feasible"], figures["placement"]["gangs"]
    return f"{counts['placed']} of {gangs} ({counts['share']:.0%})"


def _free_racks(figures: Figures) -> str:
    placement = figures["placement"]
    return f"{placement['free_racks']} of {placement['racks']}"


def _seconds(quantile: str) -> Callable[[Figures], str]:
    def cell(figures: Figures) -> str:
        value = figures["time_to_all_bound_s"][quantile]
        return "-" if value is None else f"{value:.1f}"

    return cell


ROWS: tuple[tuple[str, Callable[[Figures], str]], ...] = (
    ("gangs in one rack, of those that fit one", _of("one_rack")),
    ("gangs in one block, of those that fit one", _of("one_block")),
    ("gangs at the narrowest level they fit", _narrowest),
    ("gangs not all bound", lambda figures: str(figures["placement"]["not_all_bound"])),
    ("GPUs free at the end", lambda figures: str(figures["placement"]["free_gpus"])),
    (
        "… of them in wholly free racks",
        lambda figures: str(figures["placement"]["free_gpus_in_free_racks"]),
    ),
    ("wholly free racks", _free_racks),
    ("creation → all bound, p50 (s)", _seconds("p50")),
    ("creation → all bound, p99 (s)", _seconds("p99")),
    ("run ended", lambda figures: str(figures["ended_because"])),
)


def render(results: Figures) -> str:
    modes: Mapping[str, Figures] = results["modes"]
    measured = {name: figures for name, figures in modes.items() if "placement" in figures}
    header = "| | " + " | ".join(TITLES.get(name, name) for name in measured) + " |"
    rule = "|---|" + "---:|" * len(measured)
    rows = [
        f"| {label} | " + " | ".join(cell(figures) for figures in measured.values()) + " |"
        for label, cell in ROWS
    ]
    missing = [
        f"- {TITLES.get(name, name)}: not measured ({figures.get('not_measured', 'no placement')})"
        for name, figures in modes.items()
        if name not in measured
    ]
    params, machine = results["parameters"], results["machine"]
    shape = params["shape"]
    return "\n".join(
        [
            begin_marker(NAME),
            "",
            f"Measured {results['date']} on {machine['cpus']} x {machine['cpu_model']}: "
            f"{shape['zones']} zones x {shape['blocks_per_zone']} blocks x "
            f"{shape['racks_per_block']} racks x {shape['nodes_per_rack']} nodes x "
            f"{shape['gpus_per_node']} GPUs; {params['jobs']} gang Jobs ({params['pods']} pods, "
            f"{params['demand_ratio']:.0%} of the GPUs), all preferring one "
            f"`{params['preferred']}` (`bench/levels_e2e.py`).",
            "",
            header,
            rule,
            *rows,
            *(["", *missing] if missing else []),
            "",
            end_marker(NAME),
        ]
    )


def write(results: Figures, docs: Path = DOCS) -> None:
    """The section of levels-e2e.json in `docs`."""
    replace_section(NAME, render(results), docs)
