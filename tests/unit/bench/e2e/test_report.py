from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench.common.sections import begin_marker, end_marker
from bench.common.stats import summarize
from bench.common.timeline import Timeline
from bench.e2e.report import GOALS, SCALE_RESULTS, goals, render, table, write_docs

from tests.unit.bench.pods import pod


def figures(bind_at: float) -> dict[str, Any]:
    timeline = Timeline({"a": 1})
    timeline.job_created("a", 0.0)
    timeline.observe_pod(pod("a", "a-1", node="n1", phase="Running"), bind_at)
    result = summarize(timeline, started_at=0.0, ended_at=bind_at)
    result["ended_because"] = "all Jobs running"
    result["api_requests"] = {"per_bound_pod_excluding_benchmark": 5.0}
    return result


def results() -> dict[str, Any]:
    muster = figures(bind_at=3.0)
    muster["operator"] = {
        "cpu_seconds": 1.5,
        "peak_rss_mib": 120.0,
        "api_requests_per_admitted_pod": 3.0,
        "scheduling_cycles": {"cycles": 4, "mean_s": 0.002, "p99_at_most_s": 0.005},
    }
    return {
        "date": "2026-11-30T06:00:00+00:00",
        "machine": {
            "cpus": 2,
            "cpu_model": "a CPU",
            "memory_gib": 24.0,
            "kernel": "6.1",
            "python": "3.11.7",
            "kubernetes": "v1.37.2",
            "etcd": "v3.6.16",
            "kwok": "v0.8.0",
        },
        "parameters": {
            "jobs": 1,
            "pods": 1,
            "zone_jobs": 0,
            "gpus_per_pod": 1,
            "nodes": 1,
            "gpus_per_node": 8,
            "demand_ratio": 0.125,
            "seed": 7,
        },
        "modes": {"plain": figures(bind_at=1.0), "muster": muster},
    }


def test_the_table_has_a_column_per_measured_mode() -> None:
    lines = table(results()).splitlines()
    assert lines[0] == "| | kube-scheduler alone | Muster |"
    assert "| operator peak RSS (MiB) | - | 120.0 |" in lines


def test_goals_compare_muster_with_the_plain_run() -> None:
    verdicts = goals(results())
    assert verdicts[0].startswith("- throughput ≥ 0.9x plain: 0.33 vs 1 = 0.33x")
    assert verdicts[0].endswith("MISSED")
    assert verdicts[1] == "  (CPU of all processes: not measured in this run)"
    assert verdicts[3] == "- zero partially-started gangs: 0 -- met"


def test_the_throughput_goal_is_shown_beside_what_each_run_cost_the_machine() -> None:
    measured = results()
    measured["modes"]["plain"]["processes"] = {"kube-apiserver": {"cpu_seconds": 20.0}}
    measured["modes"]["muster"]["processes"] = {
        "kube-apiserver": {"cpu_seconds": 30.0},
        "muster": {"cpu_seconds": 10.0},
    }
    measured["modes"]["muster"]["measured_for_s"] = 20.0
    measured["modes"]["plain"]["measured_for_s"] = 10.0
    assert goals(measured)[1] == (
        "  (CPU of all processes, plain's over Muster's: 20 / 40 s = 0.50x, with 2.00 and"
        " 2.00 of 2 cores busy)"
    )
    rows = table(measured).splitlines()
    assert "| CPU of all these processes (s) | 20.0 | 40.0 |" in rows
    assert "| cores busy on average (CPU / time measured) | 2.00 | 2.00 |" in rows


def test_only_the_generated_section_is_replaced(tmp_path: Path) -> None:
    docs = tmp_path / "performance.md"
    begin, end = begin_marker("e2e.json"), end_marker("e2e.json")
    other = f"{begin_marker('other.json')}\nkept\n{end_marker('other.json')}"
    docs.write_text(f"# Performance\n\nby hand\n\n{begin}\nold\n{end}\n\n{other}\n")
    write_docs(results(), "e2e.json", docs)
    text = docs.read_text()
    assert text.startswith("# Performance\n\nby hand\n\n" + begin)
    assert text.endswith(end + "\n\n" + other + "\n")
    assert "old" not in text


def test_a_page_without_markers_is_left_alone(tmp_path: Path) -> None:
    docs = tmp_path / "performance.md"
    docs.write_text("# Performance\n")
    with pytest.raises(ValueError):
        write_docs(results(), "e2e.json", docs)
    assert docs.read_text() == "# Performance\n"


def test_cycles_show_their_mean_and_p99_bound() -> None:
    assert "| operator scheduling cycles | - | 4, 2.0 ms mean, p99 ≤ 5 ms |" in table(results())


def test_a_mode_that_failed_is_named_with_its_reason_and_left_out() -> None:
    failed = results()
    failed["modes"]["muster"] = {"not_measured": "RuntimeError: muster run exited (1)"}
    assert table(failed).splitlines()[0] == "| | kube-scheduler alone |"
    assert goals(failed) == ["- Muster was not measured in this run."]
    text = render(failed, "e2e.json")
    assert "Not measured: Muster (RuntimeError: muster run exited (1))." in text


def kueue_results() -> dict[str, Any]:
    queued = results()
    for mode, admitted in (("kueue", 1), ("kueue-muster", 0)):
        timeline = Timeline({"a": 1})
        timeline.job_created("a", 0.0)
        timeline.observe_queue(
            "a", admitted=bool(admitted), evicted=False, topology_assigned=False, at=1.0
        )
        figures = summarize(timeline, started_at=0.0, ended_at=2.0)
        figures["ended_because"] = "no pod bound or started for 30s"
        figures["api_requests"] = {"per_bound_pod_excluding_benchmark": 0.0}
        queued["modes"][mode] = figures
    del queued["modes"]["plain"], queued["modes"]["muster"]
    return queued


def test_the_kueue_table_counts_what_kueue_admitted_and_what_it_queued() -> None:
    text = render(kueue_results(), "e2e-kueue.json")
    assert "| | Kueue alone (TAS) | Kueue + Muster |" in text
    assert "| Kueue: Jobs left queued (not admitted) at the end | 0 | 1 |" in text
    assert (
        "| admitted but unschedulable: most at once (Jobs that counted) | 0 (0) | 0 (0) |" in text
    )
    assert "Goals for Muster" not in text  # the goals compare Muster alone


def test_tables_without_kueue_have_no_kueue_rows() -> None:
    assert "Kueue" not in table(results())


def test_the_scale_point_is_judged_by_its_own_goals() -> None:
    verdicts = goals(results(), GOALS[SCALE_RESULTS])
    assert verdicts[0].startswith("- throughput ≥ 0.8x plain: 0.33 vs 1 = 0.33x")
    assert "- operator peak RSS ≤ 300 MiB: 120 -- met" in verdicts
    assert not any("RSS" in verdict for verdict in goals(results()))


def test_cycles_slower_than_every_bucket_say_so() -> None:
    slow = results()
    slow["modes"]["muster"]["operator"]["scheduling_cycles"]["p99_at_most_s"] = float("inf")
    assert "p99 above the largest bucket" in table(slow)


def test_muster_is_judged_against_the_gate_floor_by_cpu_per_bound_pod() -> None:
    measured = results()
    measured["modes"]["floor"] = figures(bind_at=1.0)
    measured["modes"]["floor"]["processes"] = {"kube-apiserver": {"cpu_seconds": 0.02}}
    measured["modes"]["muster"]["processes"] = {"kube-apiserver": {"cpu_seconds": 0.03}}
    assert "- CPU per bound pod ≤ 1.1x the gate floor's (ms): 30 vs 20 = 1.50x -- MISSED" in goals(
        measured
    )
    rows = table(measured).splitlines()
    assert rows[0] == "| | kube-scheduler alone | the gate floor | Muster |"
    assert "| CPU per bound pod, all these processes (ms) | - | 20.0 | 30.0 |" in rows
