"""The results of bench/e2e/run.py as Markdown, between markers in docs/performance.md.

Each results file in bench/results/ has its own section, between two markers that
name it; only those sections are generated, the rest of the page (definitions,
analysis) is written by hand. Regenerate the sections from the results files with

    python -m bench.e2e.report [bench/results/e2e.json ...]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common.sections import DOCS, ROOT, begin_marker, end_marker, replace_section
from bench.growth import report as growth_report
from bench.levels import report as levels_report
from bench.memory import report as memory_report

RESULTS_DIR = ROOT / "bench" / "results"

TITLES = {
    "plain": "kube-scheduler alone",
    "floor": "the gate floor",
    "native": "native 1.37 gang",
    "kueue": "Kueue alone (TAS)",
    "muster": "Muster",
    "kueue-muster": "Kueue + Muster",
}

# The clients whose API requests per bound pod get a row each, by audit-log name; the
# mode's own client (the operator, the floor client, Kueue's manager) has one row.
CONTROL_PLANE_CLIENTS = ("kube-scheduler", "kube-controller-manager", "kwok", "kube-apiserver")
OWN_CLIENTS = ("muster", "muster-floor", "kueue")

Figures = Mapping[str, Any]


def one_line(figures: Figures) -> str:
    """A progress line for the console."""
    if "not_measured" in figures:
        return f"not measured ({figures['not_measured']})"
    bound = figures["time_to_all_bound_s"]
    partial = figures["partially_started_jobs"]
    return (
        f"{figures['jobs_all_bound']}/{figures['jobs']} Jobs bound, "
        f"p50 {_seconds(bound['p50'])} p99 {_seconds(bound['p99'])}, "
        f"{_number(figures['throughput_pods_bound_per_s'])} pods/s, "
        f"partial max {partial['max_at_once']} ({figures['ended_because']})"
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _number(value: float | int | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def _quantiles(distribution: Figures) -> str:
    if not distribution.get("count"):
        return "-"
    return " / ".join(f"{distribution[q]:.2f}" for q in ("p50", "p90", "p99"))


def _process(name: str, key: str) -> Callable[[Figures], str]:
    def cell(figures: Figures) -> str:
        process = figures.get("processes", {}).get(name)
        return "-" if process is None else _number(process[key])

    return cell


def _operator(key: str, digits: int = 1) -> Callable[[Figures], str]:
    def cell(figures: Figures) -> str:
        operator = figures.get("operator")
        return "-" if operator is None else _number(operator[key], digits)

    return cell


def _per_job(call: str) -> Callable[[Figures], str]:
    """One kind of the operator's requests, per Job of the burst."""

    def cell(figures: Figures) -> str:
        calls = (figures.get("operator") or {}).get("api_requests_by_call")
        return "-" if calls is None else _number(calls.get(call, 0) / figures["jobs"], 2)

    return cell


def _webhook_calls(figures: Figures) -> str:
    calls = (figures.get("operator") or {}).get("webhook_calls")
    return "-" if calls is None else _number(calls["per_job"], 2)


def control_plane_cpu(figures: Figures) -> float | None:
    """CPU seconds of every measured process (the control plane, and the operator in
    Muster's run): what the run cost the machine, whoever spent it."""
    processes = figures.get("processes") or {}
    if not processes:
        return None
    return sum(float(process["cpu_seconds"]) for process in processes.values())


def cpu_ms_per_bound_pod(figures: Figures) -> float | None:
    """What a bound pod cost the machine: every measured process's CPU over the pods."""
    cpu, bound = control_plane_cpu(figures), figures.get("pods_bound")
    return None if cpu is None or not bound else 1000 * cpu / int(bound)


def _requests_of(clients: Sequence[str]) -> Callable[[Figures], str]:
    """API requests per bound pod of these clients together."""

    def cell(figures: Figures) -> str:
        per_pod = figures["api_requests"].get("per_bound_pod_by_client")
        if per_pod is None:
            return "-"
        present = [float(per_pod[name]) for name in clients if name in per_pod]
        return _number(sum(present), 2) if present else "-"

    return cell


def cores_busy(figures: Figures) -> float | None:
    """The cores those processes kept busy on average over the measured time."""
    cpu, measured_for = control_plane_cpu(figures), figures.get("measured_for_s")
    return None if cpu is None or not measured_for else cpu / float(measured_for)


def _phase(name: str) -> Callable[[Figures], str]:
    def cell(figures: Figures) -> str:
        phase = figures.get("phases", {}).get(name)
        return "-" if phase is None else f"{phase['p50']:.2f} / {phase['p99']:.2f}"

    return cell


def _kueue(render: Callable[[Figures], str]) -> Callable[[Figures], str]:
    def cell(figures: Figures) -> str:
        kueue = figures.get("kueue")
        return "-" if kueue is None else render(kueue)

    return cell


def _episodes(figures: Figures) -> str:
    return f"{figures['max_at_once']} ({figures['jobs_ever']})"


def _evictions(kueue: Figures) -> str:
    reasons = kueue.get("evictions_by_reason") or {}
    why = "".join(f", {reason} {count:,}" for reason, count in reasons.items())
    return f"{kueue['jobs_evicted']:,} ({kueue['evictions']:,}{why})"


def _cycles(figures: Figures) -> str:
    cycles = figures.get("operator", {}).get("scheduling_cycles")
    if not cycles or not cycles["cycles"]:
        return "-"
    text = f"{cycles['cycles']:,}, {cycles['mean_s'] * 1000:.1f} ms mean"
    bound = cycles.get("p99_at_most_s")
    if bound is None:
        return text
    if bound == float("inf"):  # the slowest cycles overran the histogram's last bucket
        return f"{text}, p99 above the largest bucket"
    return f"{text}, p99 ≤ {bound * 1000:g} ms"


ROWS: tuple[tuple[str, Callable[[Figures], str]], ...] = (
    ("Jobs with every pod bound", lambda f: f"{f['jobs_all_bound']:,} / {f['jobs']:,}"),
    ("Jobs with every pod Running", lambda f: f"{f['jobs_all_running']:,} / {f['jobs']:,}"),
    ("pods bound", lambda f: f"{f['pods_bound']:,} / {f['pods']:,}"),
    ("creation → all bound, p50 / p90 / p99 (s)", lambda f: _quantiles(f["time_to_all_bound_s"])),
    (
        "creation → all Running, p50 / p90 / p99 (s)",
        lambda f: _quantiles(f["time_to_all_running_s"]),
    ),
    ("where the time goes, p50 / p99 (s):", lambda f: ""),
    ("- creation → all pods exist", _phase("created_to_all_pods_exist_s")),
    ("- creation → Muster's PodGroup exists", _phase("created_to_gang_recorded_s")),
    ("- pods and PodGroup exist → gang admitted", _phase("pods_and_gang_exist_to_admitted_s")),
    ("- gang admitted → all bound", _phase("admitted_to_all_bound_s")),
    ("throughput (pods bound / s)", lambda f: _number(f["throughput_pods_bound_per_s"])),
    ("last bind after (s)", lambda f: _number(f["last_bind_after_s"], 2)),
    (
        "partially-started Jobs: most at once (Jobs ever)",
        lambda f: _episodes(f["partially_started_jobs"]),
    ),
    ("operator CPU (s)", _operator("cpu_seconds")),
    ("operator peak RSS (MiB)", _operator("peak_rss_mib")),
    ("operator API requests per admitted pod", _operator("api_requests_per_admitted_pod", 2)),
    ("operator scheduling cycles", _cycles),
    ("operator status writes per gang", _per_job("update podgroups/status")),
    ("operator Events per gang", _per_job("create events")),
    ("webhook calls per Job", _webhook_calls),
    ("floor client CPU (s)", _process("muster-floor", "cpu_seconds")),
    (
        "API requests per bound pod, all clients",
        lambda f: _number(f["api_requests"]["per_bound_pod_excluding_benchmark"], 2),
    ),
    *((f"- {name}", _requests_of((name,))) for name in CONTROL_PLANE_CLIENTS),
    ("- the mode's own client", _requests_of(OWN_CLIENTS)),
    ("kube-scheduler CPU (s)", _process("kube-scheduler", "cpu_seconds")),
    ("kube-controller-manager CPU (s)", _process("kube-controller-manager", "cpu_seconds")),
    ("kube-apiserver CPU (s)", _process("kube-apiserver", "cpu_seconds")),
    ("CPU of all these processes (s)", lambda f: _number(control_plane_cpu(f))),
    ("CPU per bound pod, all these processes (ms)", lambda f: _number(cpu_ms_per_bound_pod(f))),
    ("measured for (s)", lambda f: _number(f["measured_for_s"])),
    ("cores busy on average (CPU / time measured)", lambda f: _number(cores_busy(f), 2)),
    ("run ended because", lambda f: str(f["ended_because"])),
)


# Rows for the runs through Kueue (bench/common/stats.py, kueue_figures).
KUEUE_ROWS: tuple[tuple[str, Callable[[Figures], str]], ...] = (
    ("Kueue: Workloads admitted at the end", _kueue(lambda k: f"{k['admitted_at_end']:,}")),
    (
        "Kueue: Jobs placed by its TAS (topology assignment)",
        _kueue(lambda k: f"{k['admitted_with_topology_assignment']:,}"),
    ),
    (
        "Kueue: Jobs left queued (not admitted) at the end",
        _kueue(lambda k: f"{k['queued_at_end']:,}"),
    ),
    (
        "admitted but unschedulable: most at once (Jobs that counted)",
        _kueue(lambda k: _episodes(k["admitted_but_unschedulable_jobs"])),
    ),
    (
        "admitted but unschedulable at the end",
        _kueue(lambda k: f"{k['admitted_but_unschedulable_jobs']['at_end']:,}"),
    ),
    (
        "admitted, not all pods bound at the end",
        _kueue(lambda k: f"{k['admitted_not_all_bound_at_end']:,}"),
    ),
    ("Jobs evicted by Kueue (evictions: why)", _kueue(_evictions)),
    ("- creation → Kueue admits, p50 / p99 (s)", _phase("created_to_kueue_admitted_s")),
    ("- Kueue admits → all bound, p50 / p99 (s)", _phase("kueue_admitted_to_all_bound_s")),
    ("Kueue manager CPU (s)", _process("kueue", "cpu_seconds")),
    ("Kueue's waitForPodsReady timeout", _kueue(lambda k: str(k.get("pods_ready_timeout", "-")))),
)


def measured(results: Figures) -> list[str]:
    return [
        mode
        for mode in TITLES
        if mode in results["modes"] and "not_measured" not in results["modes"][mode]
    ]


def table(results: Figures) -> str:
    modes = measured(results)
    lines = [
        "| | " + " | ".join(TITLES[mode] for mode in modes) + " |",
        "|---|" + "---:|" * len(modes),
    ]
    kueue = any("kueue" in results["modes"][mode] for mode in modes)
    for title, cell in ROWS + (KUEUE_ROWS if kueue else ()):
        lines.append(
            f"| {title} | " + " | ".join(cell(results["modes"][mode]) for mode in modes) + " |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Goals:
    """What the issue asks of Muster in one results file."""

    throughput_of_plain: float = 0.9
    peak_rss_mib: float | None = None


# The scale point (5,000 nodes, 50,000 pods) asks less throughput and a memory bound.
SCALE_RESULTS = "e2e-scale.json"
SCALE_GOALS = Goals(throughput_of_plain=0.8, peak_rss_mib=300)
GOALS = {SCALE_RESULTS: SCALE_GOALS, "e2e-scale-memory.json": SCALE_GOALS}


def goals(results: Figures, wanted: Goals = Goals()) -> list[str]:
    """The issue's goals for Muster, each with the figure it is judged by."""
    modes = {mode: results["modes"][mode] for mode in measured(results)}
    muster, plain = modes.get("muster"), modes.get("plain")
    if muster is None:
        return ["- Muster was not measured in this run."]
    lines = []
    if plain is not None:
        lines.append(
            _ratio_goal(
                f"throughput ≥ {wanted.throughput_of_plain:g}x plain",
                muster["throughput_pods_bound_per_s"],
                plain["throughput_pods_bound_per_s"],
                at_least=wanted.throughput_of_plain,
            )
        )
        lines.append(_cpu_bound(muster, plain, int(results["machine"]["cpus"])))
        lines.append(
            _ratio_goal(
                "p99 creation → all bound ≤ 1.5x plain",
                muster["time_to_all_bound_s"]["p99"],
                plain["time_to_all_bound_s"]["p99"],
                at_most=1.5,
            )
        )
    partial = muster["partially_started_jobs"]["max_at_once"]
    verdict = "met" if partial == 0 else "MISSED"
    lines.append(f"- zero partially-started gangs: {partial} -- {verdict}")
    if wanted.peak_rss_mib is not None and "operator" in muster:
        peak = muster["operator"]["peak_rss_mib"]
        verdict = "met" if peak <= wanted.peak_rss_mib else "MISSED"
        lines.append(f"- operator peak RSS ≤ {wanted.peak_rss_mib:g} MiB: {peak:g} -- {verdict}")
    lines += _peer_goals(muster, modes)
    return lines


def _peer_goals(muster: Figures, modes: Mapping[str, Figures]) -> list[str]:
    """Muster beside the other gang schedulers and the gate floor, where they were measured."""
    lines = []
    floor, native, kueue = modes.get("floor"), modes.get("native"), modes.get("kueue")
    if floor is not None:
        lines.append(
            _ratio_goal(
                "CPU per bound pod ≤ 1.1x the gate floor's (ms)",
                _rounded(cpu_ms_per_bound_pod(muster)),
                _rounded(cpu_ms_per_bound_pod(floor)),
                at_most=1.1,
            )
        )
    for peer, name, pace in ((native, "native", 1.1), (kueue, "Kueue", 1.0)):
        if peer is None:
            continue
        lines.append(
            _ratio_goal(
                f"throughput ≥ {pace:g}x {name}",
                muster["throughput_pods_bound_per_s"],
                peer["throughput_pods_bound_per_s"],
                at_least=pace,
            )
        )
        lines.append(
            _ratio_goal(
                f"p99 creation → all bound at most {name}'s",
                muster["time_to_all_bound_s"]["p99"],
                peer["time_to_all_bound_s"]["p99"],
                at_most=1.0,
            )
        )
    return lines


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _cpu_bound(muster: Figures, plain: Figures, cpus: int) -> str:
    """Beside the throughput goal, what the runs cost the machine: where every core is
    busy, a mode that needs more CPU for the same pods cannot keep the other's pace."""
    ours, theirs = control_plane_cpu(muster), control_plane_cpu(plain)
    busy = cores_busy(plain), cores_busy(muster)
    if ours is None or theirs is None or not ours or busy[0] is None or busy[1] is None:
        return "  (CPU of all processes: not measured in this run)"
    return (
        f"  (CPU of all processes, plain's over Muster's: {theirs:g} / {ours:g} s = "
        f"{theirs / ours:.2f}x, with {busy[0]:.2f} and {busy[1]:.2f} of {cpus} cores busy)"
    )


def _ratio_goal(
    what: str,
    ours: float | None,
    theirs: float | None,
    *,
    at_least: float | None = None,
    at_most: float | None = None,
) -> str:
    if ours is None or not theirs:
        return f"- {what}: not measurable in this run"
    ratio = ours / theirs
    met = (at_least is None or ratio >= at_least) and (at_most is None or ratio <= at_most)
    return f"- {what}: {ours:g} vs {theirs:g} = {ratio:.2f}x -- {'met' if met else 'MISSED'}"


def render(results: Figures, name: str) -> str:
    machine = results["machine"]
    params = results["parameters"]
    return "\n".join(
        [
            begin_marker(name),
            "",
            f"Measured {results['date']} on {machine['cpus']} x {machine['cpu_model']}, "
            f"{machine['memory_gib']} GiB, Linux {machine['kernel']}, Python "
            f"{machine['python']}; Kubernetes {machine['kubernetes']}, etcd "
            f"{machine['etcd']}, KWOK {machine['kwok']}.",
            "",
            f"Workload: {params['jobs']:,} Jobs, {params['pods']:,} pods "
            f"({params['zone_jobs']:,} Jobs confined to one zone), {params['gpus_per_pod']} "
            f"GPU{'' if params['gpus_per_pod'] == 1 else 's'} per pod, on "
            f"{params['nodes']:,} nodes x {params['gpus_per_node']} GPUs: "
            f"demand {params['demand_ratio']:.0%} of capacity. Seed {params['seed']}.",
            "",
            table(results),
            "",
            *(
                f"Not measured: {TITLES[mode]} ({figures['not_measured']}).\n"
                for mode, figures in results["modes"].items()
                if "not_measured" in figures
            ),
            *(
                [
                    "Goals for Muster (from the issue; reported, never asserted):",
                    "",
                    *goals(results, GOALS.get(name, Goals())),
                    "",
                ]
                if "muster" in measured(results)
                else []
            ),
            end_marker(name),
        ]
    )


def write_docs(results: Figures, name: str, docs: Path = DOCS) -> None:
    """Replace the section of results file ``name`` (e.g. ``e2e.json``) in ``docs``."""
    replace_section(name, render(results, name), docs)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    sources = [Path(argument) for argument in arguments] or [
        *sorted(RESULTS_DIR.glob("e2e*.json")),
        *(
            report.RESULTS
            for report in (growth_report, memory_report, levels_report)
            if report.RESULTS.exists()
        ),
    ]
    for source in sources:
        results = json.loads(source.read_text())
        if source.name == growth_report.NAME:
            growth_report.write(results)
        elif source.name == memory_report.NAME:
            memory_report.write(results)
        elif source.name == levels_report.NAME:
            levels_report.write(results)
        else:
            write_docs(results, source.name)
        print(f"{DOCS}: section of {source.name} regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
