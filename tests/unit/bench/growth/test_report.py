from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench.common.sections import begin_marker, end_marker
from bench.growth.report import NAME, cost, exponent, exponents, write


def measured(cpu_seconds: float, requests: int, **extra: Any) -> dict[str, Any]:
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
            "scheduling_cycles": {"cycles": 10, "mean_s": 0.0123, "p99_at_most_s": 0.05},
        },
        **extra,
    }


def test_a_row_is_per_pod_and_per_cycle() -> None:
    row = cost(500, 128, 1000, measured(cpu_seconds=8.0, requests=2500))
    assert row["operator_cpu_s_per_1000_pods"] == 8.0
    assert row["api_requests_per_pod"] == 2.5
    assert row["engine_ms_per_cycle"] == 12.3
    assert row["engine_p99_ms_per_cycle"] == 50.0


def test_a_row_keeps_what_the_waiting_gangs_did() -> None:
    row = cost(500, 200, 1000, measured(8.0, 2500, waiting_pods_bound=0))
    assert row["waiting_pods_bound"] == 0


def test_the_exponent_is_the_slope_on_log_log_axes() -> None:
    assert exponent([(100, 3.0), (1000, 30.0), (10000, 300.0)]) == pytest.approx(1.0)
    assert exponent([(100, 5.0), (400, 10.0)]) == pytest.approx(0.5)
    assert exponent([(100, 7.0), (1000, 7.0)]) == pytest.approx(0.0)


def test_no_exponent_from_a_single_point() -> None:
    assert exponent([(500, 8.0)]) is None
    assert exponent([(500, 8.0), (500, 9.0), (1000, 0.0)]) is None


def test_each_series_has_its_exponents_and_skips_unmeasured_rows() -> None:
    rows = [
        cost(500, 200, 1000, measured(8.0, 2000)),
        cost(2000, 800, 4000, measured(128.0, 8000)),
        cost(5000, 2000, 10000, {"not_measured": "RuntimeError: stalled"}),
    ]
    fitted = exponents({"nodes": rows})
    assert set(fitted) == {"nodes"}
    assert fitted["nodes"]["operator_cpu_s_per_1000_pods"] == pytest.approx(1.0)
    assert fitted["nodes"]["api_requests_per_pod"] == pytest.approx(0.0)


def test_the_section_and_the_plot_are_written(tmp_path: Path) -> None:
    docs = tmp_path / "performance.md"
    docs.write_text(f"before\n{begin_marker(NAME)}\nold\n{end_marker(NAME)}\nafter\n")
    results = {
        "date": "2026-12-01T00:00:00+00:00",
        "machine": {"cpus": 2, "cpu_model": "x", "kubernetes": "v1.37.2", "kwok": "v0.7"},
        "nodes": [
            cost(500, 200, 1000, measured(8.0, 2500)),
            cost(5000, 2000, 10000, {"not_measured": "RuntimeError: stalled"}),
        ],
        "waiting": [
            cost(500, 200, 1000, measured(8.0, 2500)) | {"waiting": 100},
            cost(500, 200, 1000, measured(16.0, 2500)) | {"waiting": 1000},
        ],
    }
    image = tmp_path / "images" / "plot.png"
    write(results, docs, image)
    text = docs.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    assert "| 500 | 1,000 | 50 | 12.5 | 10 | 8 | 2.5 | 12.3 | 50 | 150 | 0 |" in text
    assert "| 1,000 | 1,000 | 50 | 12.5 | 10 | 16 | 2.5 | 12.3 | 50 | 150 | 0 |" in text
    assert "| growth exponent |  |  |  |  | 0.3 | 0 | 0 | 0 | 0 |  |" in text
    assert "not measured: RuntimeError: stalled" in text
    assert image.read_bytes().startswith(b"\x89PNG")
