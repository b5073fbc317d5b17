"""bench/results/levels-e2e.json as tables in docs/performance.md: the burst, then the waves.

One column per system, every burst (every run of the waves) measured side by side in
one run. Counts of gangs are summed over the bursts; what is left free is given per
burst (in the order of the seeds), as it turns on each burst's own order; times are
the median of the bursts' p50 and the worst of their p99.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from statistics import median
from typing import Any

from bench.common.sections import DOCS, ROOT, begin_marker, end_marker, replace_section

NAME = "levels-e2e.json"
RESULTS = ROOT / "bench" / "results" / NAME
TITLES = {"muster": "Muster", "kueue": "Kueue alone (TAS)"}

Figures = Mapping[str, Any]
Cell = Callable[[Sequence[Figures]], str]


def _share(placed: int, of: int) -> str:
    return f"{placed} of {of}" + (f" ({placed / of:.0%})" if of else "")


def _sum_of(part: str, key: str = "placement") -> Cell:
    def cell(runs: Sequence[Figures]) -> str:
        counts = [run[key][part] for run in runs]
        return _share(sum(c["placed"] for c in counts), sum(c["could"] for c in counts))

    return cell


def _narrowest(key: str = "placement") -> Cell:
    def cell(runs: Sequence[Figures]) -> str:
        placed = sum(run[key]["at_narrowest_feasible"]["placed"] for run in runs)
        return _share(placed, sum(run[key]["gangs"] for run in runs))

    return cell


def _total(part: str, key: str = "placement") -> Cell:
    return lambda runs: str(sum(run[key][part] for run in runs))


def _per_run(*path: str) -> Cell:
    def cell(runs: Sequence[Figures]) -> str:
        values = [_at(run, path) for run in runs]
        return " · ".join(str(value) for value in values) + f" (sum {sum(values)})"

    return cell


def _at(figures: Figures, path: Sequence[str]) -> Any:
    for key in path:
        figures = figures[key]
    return figures


def _seconds(quantile: str, pick: Callable[[list[float]], float], *path: str) -> Cell:
    def cell(runs: Sequence[Figures]) -> str:
        values = [_at(run, path)[quantile] for run in runs]
        known = [value for value in values if value is not None]
        return f"{pick(known):.1f}" if known else "-"

    return cell


def _ended(*path: str) -> Cell:
    return lambda runs: " · ".join(sorted({str(_at(run, path)) for run in runs}))


BOUND = "time_to_all_bound_s"
ROWS: tuple[tuple[str, Cell], ...] = (
    ("gangs in one rack, of those that fit one", _sum_of("one_rack")),
    ("gangs in one block, of those that fit one", _sum_of("one_block")),
    ("gangs at the narrowest level they fit", _narrowest()),
    ("gangs not all bound", _total("not_all_bound")),
    ("GPUs free at the end, per burst", _per_run("placement", "free_gpus")),
    ("… of them in wholly free racks", _per_run("placement", "free_gpus_in_free_racks")),
    ("wholly free racks, per burst", _per_run("placement", "free_racks")),
    ("creation → all bound, p50 (s, median of the bursts)", _seconds("p50", median, BOUND)),
    ("creation → all bound, p99 (s, worst burst)", _seconds("p99", max, BOUND)),
    ("runs ended", _ended("ended_because")),
)
SECOND = "second_wave_time_to_all_bound_s"
WAVE_ROWS: tuple[tuple[str, Cell], ...] = (
    ("gangs in one rack, of those a rack had room for then", _sum_of("one_rack", "waves")),
    ("gangs in one block, of those a block had room for then", _sum_of("one_block", "waves")),
    ("gangs at the narrowest level with room then", _narrowest("waves")),
    ("gangs never bound", _total("not_all_bound", "waves")),
    ("gangs not running at the end", _total("waiting_at_end", "waves")),
    (
        "wholly free racks at the second wave, per run",
        _per_run("waves", "at_second_wave", "free_racks"),
    ),
    (
        "… GPUs in them",
        _per_run("waves", "at_second_wave", "free_gpus_in_free_racks"),
    ),
    ("wholly free racks at the end, per run", _per_run("waves", "free_racks")),
    ("… GPUs in them", _per_run("waves", "free_gpus_in_free_racks")),
    ("GPUs free at the end, per run", _per_run("waves", "free_gpus")),
    ("first wave: creation → all bound, p50 (s, median)", _seconds("p50", median, BOUND)),
    ("first wave: creation → all bound, p99 (s, worst)", _seconds("p99", max, BOUND)),
    (
        "second wave: creation → all bound, p50 (s, median)",
        _seconds("p50", median, "waves", SECOND),
    ),
    ("second wave: creation → all bound, p99 (s, worst)", _seconds("p99", max, "waves", SECOND)),
    ("second wave ended", _ended("waves", "second_wave_ended_because")),
)


def _table(entries: Sequence[Figures], rows: Sequence[tuple[str, Cell]], key: str) -> list[str]:
    """One column a system over ``entries`` (each a seed's modes), and what was not
    measured (no ``key`` in a mode's figures)."""
    runs: dict[str, list[Figures]] = {}
    missing = []
    for entry in entries:
        for mode, figures in entry["modes"].items():
            if key in figures:
                runs.setdefault(mode, []).append(figures)
            else:
                reason = figures.get("not_measured", f"no {key}")
                missing.append(f"- seed {entry['seed']}, {TITLES.get(mode, mode)}: {reason}")
    header = "| | " + " | ".join(TITLES.get(mode, mode) for mode in runs) + " |"
    rule = "|---|" + "---:|" * len(runs)
    lines = [
        f"| {label} | " + " | ".join(cell(measured) for measured in runs.values()) + " |"
        for label, cell in rows
    ]
    return [header, rule, *lines, *(["", "Not measured:", *missing] if missing else [])]


def _shape(params: Figures, machine: Figures, date: str) -> str:
    shape = params["shape"]
    return (
        f"Measured {date} on {machine['cpus']} x {machine['cpu_model']}: "
        f"{shape['zones']} zones x {shape['blocks_per_zone']} blocks x "
        f"{shape['racks_per_block']} racks x {shape['nodes_per_rack']} nodes x "
        f"{shape['gpus_per_node']} GPUs"
    )


def _burst(results: Figures) -> list[str]:
    bursts: Sequence[Figures] = results["bursts"]
    params = results["parameters"]
    seeds = ", ".join(str(burst["seed"]) for burst in bursts)
    return [
        f"{_shape(params, results['machine'], results['date'])}; {len(bursts)} bursts "
        f"(seeds {seeds}) of {params['jobs']} gang Jobs ({params['pods']} pods, "
        f"{params['demand_ratio']:.0%} of the GPUs), all preferring one "
        f"`{params['preferred']}`; each burst through each system on a fresh control "
        "plane (`bench/levels/run.py`).",
        "",
        *_table(bursts, ROWS, "placement"),
    ]


def _waves(section: Figures) -> list[str]:
    runs: Sequence[Figures] = section["runs"]
    params = section["parameters"]
    first, second = params["first_wave"], params["second_wave"]
    seeds = ", ".join(str(run["seed"]) for run in runs)
    ratios = " · ".join(f"{run['demand_ratio_after_churn']:.0%}" for run in runs)
    return [
        f"Waves: {_shape(params, section['machine'], section['date'])}; {len(runs)} runs "
        f"(seeds {seeds}). A first wave of {first['jobs']} gangs ({first['gpus']} GPUs), "
        f"{first['short']} of them finishing {params['short_hold']} after they start; "
        f"once they have, a second wave of {second['jobs']} gangs ({second['gpus']} GPUs): "
        f"{ratios} of the GPUs asked for at once, per run. The "
        f"second wave ends once {params['second_wave_settle_s']:.0f} s pass without a "
        "gang bound; its times are seen by listing the pods every second.",
        "",
        *_table(runs, WAVE_ROWS, "waves"),
    ]


def render(results: Figures) -> str:
    burst = _burst(results) if "bursts" in results else []
    waves = _waves(results["waves"]) if "waves" in results else []
    return "\n".join(
        [
            begin_marker(NAME),
            "",
            *burst,
            *([""] if burst and waves else []),
            *waves,
            "",
            end_marker(NAME),
        ]
    )


def write(results: Figures, docs: Path = DOCS) -> None:
    """The section of levels-e2e.json in `docs`."""
    replace_section(NAME, render(results), docs)
