from __future__ import annotations

from bench.controlplane import cycle_figures

METRICS = """\
# HELP muster_cycle_duration_seconds Time the decision engine takes for one scheduling cycle
# TYPE muster_cycle_duration_seconds histogram
muster_cycle_duration_seconds_bucket{le="0.001"} 10.0
muster_cycle_duration_seconds_bucket{le="0.01"} 95.0
muster_cycle_duration_seconds_bucket{le="0.1"} 99.0
muster_cycle_duration_seconds_bucket{le="1.0"} 100.0
muster_cycle_duration_seconds_bucket{le="+Inf"} 100.0
muster_cycle_duration_seconds_count 100.0
muster_cycle_duration_seconds_sum 0.8
"""


def test_cycle_figures_read_the_histogram() -> None:
    assert cycle_figures(METRICS) == {
        "cycles": 100,
        "total_s": 0.8,
        "mean_s": 0.008,
        "p99_at_most_s": 0.1,
    }


def test_no_cycles_yet() -> None:
    assert cycle_figures("")["mean_s"] is None
