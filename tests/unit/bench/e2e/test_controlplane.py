from __future__ import annotations

from bench.e2e.controlplane import cycle_figures, rollback_count

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


def test_rollbacks_are_read_from_their_counter() -> None:
    text = (
        "# TYPE muster_rollbacks_total counter\n"
        "muster_rollbacks_total 3.0\n"
        "muster_rollbacks_created 1.7e9\n"
    )
    assert rollback_count(text) == 3
    assert rollback_count(METRICS) == 0


def test_cycles_already_counted_are_left_out() -> None:
    earlier = (
        "# TYPE muster_cycle_duration_seconds histogram\n"
        'muster_cycle_duration_seconds_bucket{le="0.001"} 10.0\n'
        'muster_cycle_duration_seconds_bucket{le="0.01"} 20.0\n'
        'muster_cycle_duration_seconds_bucket{le="0.1"} 20.0\n'
        'muster_cycle_duration_seconds_bucket{le="1.0"} 20.0\n'
        'muster_cycle_duration_seconds_bucket{le="+Inf"} 20.0\n'
        "muster_cycle_duration_seconds_count 20.0\n"
        "muster_cycle_duration_seconds_sum 0.04\n"
    )
    assert cycle_figures(METRICS, since=earlier) == {
        "cycles": 80,
        "total_s": 0.76,
        "mean_s": 0.0095,
        "p99_at_most_s": 1.0,  # 79 of the 80 within 0.1 s: under 99%
    }
