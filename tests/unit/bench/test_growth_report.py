from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.growth_report import NAME, cost, write
from bench.sections import begin_marker, end_marker


def measured(cpu_seconds: float, requests: int) -> dict[str, Any]:
    return {
        "pods_bound": 1000,
        "throughput_pods_bound_per_s": 50.0,
        "time_to_all_bound_s": {"p99": 12.5},
        "partially_started_jobs": {"max_at_once": 0},
        "ended_because": "all Jobs running",
        "operator": {
            "cpu_seconds": cpu_seconds,
            "api_requests": requests,
            "peak_rss_mib": 150.0,
            "scheduling_cycles": {"cycles": 10, "mean_s": 0.0123},
        },
    }


def test_a_row_is_per_pod_and_per_cycle() -> None:
    row = cost(500, 128, 1000, measured(cpu_seconds=8.0, requests=2500))
    assert row["operator_cpu_s_per_1000_pods"] == 8.0
    assert row["api_requests_per_pod"] == 2.5
    assert row["engine_ms_per_cycle"] == 12.3


def test_the_section_and_the_plot_are_written(tmp_path: Path) -> None:
    docs = tmp_path / "performance.md"
    docs.write_text(f"before\n{begin_marker(NAME)}\nold\n{end_marker(NAME)}\nafter\n")
    rows = [
        cost(500, 200, 1000, measured(8.0, 2500)),
        cost(5000, 2000, 10000, {"not_measured": "RuntimeError: stalled"}),
    ]
    results = {
        "date": "2026-12-01T00:00:00+00:00",
        "machine": {"cpus": 2, "cpu_model": "x", "kubernetes": "v1.37.2", "kwok": "v0.7"},
        "sizes": rows,
    }
    image = tmp_path / "images" / "plot.png"
    write(results, docs, image)
    text = docs.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    assert "| 500 | 200 | 1,000 | 50 | 12.5 | 8 | 2.5 | 12.3 | 150 | 0 |" in text
    assert "not measured: RuntimeError: stalled" in text
    assert image.read_bytes().startswith(b"\x89PNG")
