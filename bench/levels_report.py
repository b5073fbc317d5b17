"""bench/results/levels-e2e.json as a table in docs/performance.md.

One column per system, every burst measured side by side in one run. Counts of gangs
are summed over the bursts; what is left free at the end is given per burst (in the
order of the seeds), as it turns on each burst's own order; times are the median of
the bursts' p50 and the worst of their p99.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.sections import DOCS, ROOT, begin_marker, end_marker, replace_section

NAME = "levels-e2e.json"
RESULTS = ROOT / "bench" / "results" / NAME
TITLES = {"muster": "Muster", "kueue": "Kueue alone (TAS)"}

Figures = Mapping[str, Any]
Cell = Callable[[Sequence[Figures]], str]


def _share(placed: int, of: int) -> str:
    return f"{placed} of {of}" + (f" ({placed / of:.0%})" if of else "")


def _sum_of(part: str) -> Cell:
    def cell(runs: Sequence[Figures]) -> str:
        counts = [run["placement"][part] for run in runs]
        return _share(sum(c["placed"] for c in counts), sum(c["could"] for c in counts))

    return cell


def _narrowest(runs: Sequence[Figures]) -> str:
    placed = sum(run["placement"]["at_narrowest_feasible"]["placed"] for run in runs)
    return _share(placed, sum(run["placement"]["gangs"] for run in runs))


def _per_burst(key: str) -> Cell:
    def cell(runs: Sequence[Figures]) -> str:
        values = [run["placement"][key] for run in runs]
        return " · ".join(str(value) for value in values) + f" (sum {sum(values)})"

    return cell


def _seconds(quantile: str, pick: Callable[[list[float]], float]) -> Cell:
    def cell(runs: Sequence[Figures]) -> str:
        values = [run["time_to_all_bound_s"][quantile] for run in runs]
        known = [value for value in values if value is not None]
        return f"{pick(known):.1f}" if known else "-"

    return cell


def _ended(runs: Sequence[Figures]) -> str:
    return " · ".join(sorted({str(run["ended_because"]) for run in runs}))


ROWS: tuple[tuple[str, Cell], ...] = (
    ("gangs in one rack, of those that fit one", _sum_of("one_rack")),
    ("gangs in one block, of those that fit one", _sum_of("one_block")),
    ("gangs at the narrowest level they fit", _narrowest),
    ("gangs not all bound", lambda runs: str(sum(r["placement"]["not_all_bound"] for r in runs))),
    ("GPUs free at the end, per burst", _per_burst("free_gpus")),
    ("… of them in wholly free racks", _per_burst("free_gpus_in_free_racks")),
    ("wholly free racks, per burst", _per_burst("free_racks")),
    ("creation → all bound, p50 (s, median of the bursts)", _seconds("p50", statistics.median)),
    ("creation → all bound, p99 (s, worst burst)", _seconds("p99", max)),
    ("runs ended", _ended),
)


def render(results: Figures) -> str:
    bursts: Sequence[Figures] = results["bursts"]
    runs: dict[str, list[Figures]] = {}
    missing = []
    for burst in bursts:
        for mode, figures in burst["modes"].items():
            if "placement" in figures:
                runs.setdefault(mode, []).append(figures)
            else:
                reason = figures.get("not_measured", "no placement")
                missing.append(f"- seed {burst['seed']}, {TITLES.get(mode, mode)}: {reason}")
    header = "| | " + " | ".join(TITLES.get(mode, mode) for mode in runs) + " |"
    rule = "|---|" + "---:|" * len(runs)
    rows = [
        f"| {label} | " + " | ".join(cell(measured) for measured in runs.values()) + " |"
        for label, cell in ROWS
    ]
    params, machine = results["parameters"], results["machine"]
    shape = params["shape"]
    seeds = ", ".join(str(burst["seed"]) for burst in bursts)
    return "\n".join(
        [
            begin_marker(NAME),
            "",
            f"Measured {results['date']} on {machine['cpus']} x {machine['cpu_model']}: "
            f"{shape['zones']} zones x {shape['blocks_per_zone']} blocks x "
            f"{shape['racks_per_block']} racks x {shape['nodes_per_rack']} nodes x "
            f"{shape['gpus_per_node']} GPUs; {len(bursts)} bursts (seeds {seeds}) of "
            f"{params['jobs']} gang Jobs ({params['pods']} pods, {params['demand_ratio']:.0%} "
            f"of the GPUs), all preferring one `{params['preferred']}`; each burst through "
            "each system on a fresh control plane (`bench/levels_e2e.py`).",
            "",
            header,
            rule,
            *rows,
            *(["", "Not measured:", *missing] if missing else []),
            "",
            end_marker(NAME),
        ]
    )


def write(results: Figures, docs: Path = DOCS) -> None:
    """The section of levels-e2e.json in `docs`."""
    replace_section(NAME, render(results), docs)
