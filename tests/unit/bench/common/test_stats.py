from __future__ import annotations

import pytest
from bench.common.stats import distribution, percentile, summarize
from bench.common.timeline import STUCK_GRACE_S, Timeline

from tests.unit.bench.pods import pod


def test_percentile_interpolates_between_ranks() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == 2.5
    assert percentile(values, 100) == 4.0
    assert percentile([5.0], 99) == 5.0


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)


def test_distribution_of_nothing_has_no_quantiles() -> None:
    assert distribution([]) == {
        "count": 0,
        "p50": None,
        "p90": None,
        "p99": None,
        "mean": None,
        "max": None,
    }


def test_summary_measures_each_job_from_its_creation() -> None:
    timeline = Timeline({"a": 2, "b": 1})
    timeline.job_created("a", 10.0)
    timeline.job_created("b", 10.5)
    timeline.observe_pod(pod("a", "a-1", node="n1"), 11.0)
    timeline.observe_pod(pod("a", "a-2", node="n2", phase="Running"), 12.0)
    timeline.observe_pod(pod("a", "a-1", node="n1", phase="Running"), 13.0)
    timeline.observe_pod(pod("b", "b-1", unschedulable=True), 11.0)

    figures = summarize(timeline, started_at=10.0, ended_at=20.0)

    assert figures["jobs_all_bound"] == 1
    assert figures["time_to_all_bound_s"]["p50"] == 2.0
    assert figures["time_to_all_running_s"]["max"] == 3.0
    assert figures["pods_bound"] == 2
    assert figures["last_bind_after_s"] == 2.0
    assert figures["throughput_pods_bound_per_s"] == 1.0
    assert figures["partially_started_jobs"]["max_at_once"] == 0


def test_phases_split_a_gang_job_at_its_record_and_its_admission() -> None:
    timeline = Timeline({"a": 2})
    timeline.job_created("a", 0.0)
    timeline.observe_pod(pod("a", "a-1", gated=True), 1.0)
    timeline.observe_gang("a", admitted=False, at=2.0)
    timeline.observe_pod(pod("a", "a-2", gated=True), 3.0)
    timeline.observe_gang("a", admitted=True, at=7.0)
    timeline.observe_pod(pod("a", "a-1", node="n1"), 7.5)
    timeline.observe_pod(pod("a", "a-2", node="n2"), 8.0)

    phases = summarize(timeline, started_at=0.0, ended_at=9.0)["phases"]

    assert phases["created_to_all_pods_exist_s"]["p50"] == 3.0
    assert phases["created_to_gang_recorded_s"]["p50"] == 2.0
    assert phases["pods_and_gang_exist_to_admitted_s"]["p50"] == 4.0
    assert phases["admitted_to_all_bound_s"]["p50"] == 1.0


def test_without_a_gang_record_only_pod_creation_is_a_phase() -> None:
    timeline = Timeline({"a": 1})
    timeline.job_created("a", 0.0)
    timeline.observe_pod(pod("a", "a-1", node="n1"), 1.0)
    assert list(summarize(timeline, started_at=0.0, ended_at=1.0)["phases"]) == [
        "created_to_all_pods_exist_s"
    ]


def test_kueue_figures_count_what_kueue_admitted_and_what_it_left_queued() -> None:
    timeline = Timeline({"placed": 1, "stuck": 2, "queued": 1, "unqueued": 1})
    for job in ("placed", "stuck", "queued"):
        timeline.job_created(job, 0.0)
    timeline.observe_queue("placed", admitted=True, evicted=False, topology_assigned=True, at=1.0)
    timeline.observe_queue("stuck", admitted=True, evicted=False, topology_assigned=False, at=1.0)
    timeline.observe_queue("queued", admitted=False, evicted=False, topology_assigned=False, at=1.0)
    timeline.observe_pod(pod("placed", "placed-1", node="n1"), 2.0)
    timeline.observe_pod(pod("stuck", "stuck-1", node="n1"), 2.0)
    timeline.observe_pod(pod("stuck", "stuck-2", unschedulable=True), 2.0)

    figures = summarize(timeline, started_at=0.0, ended_at=20.0)

    assert figures["kueue"] == {
        "workloads": 3,
        "admitted_at_end": 2,
        "admitted_with_topology_assignment": 1,
        "queued_at_end": 1,
        "admitted_not_all_bound_at_end": 1,
        "jobs_evicted": 0,
        "evictions": 0,
        "evictions_by_reason": {},
        "admitted_but_unschedulable_jobs": {
            "max_at_once": 1,
            "jobs_ever": 1,
            "at_end": 1,
            "job_seconds": 18.0,
            "grace_s": STUCK_GRACE_S,
        },
    }
    assert figures["phases"]["created_to_kueue_admitted_s"]["count"] == 2
    assert figures["phases"]["kueue_admitted_to_all_bound_s"]["p50"] == 1.0


def test_without_kueue_there_are_no_kueue_figures() -> None:
    timeline = Timeline({"a": 1})
    assert "kueue" not in summarize(timeline, started_at=0.0, ended_at=1.0)
