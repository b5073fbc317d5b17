from __future__ import annotations

from bench.timeline import Timeline

from tests.unit.bench.pods import pod


def test_a_bound_pod_beside_an_unschedulable_sibling_is_a_partial_start() -> None:
    timeline = Timeline({"a": 2})
    timeline.observe_pod(pod("a", "a-1", node="n1"), 1.0)
    timeline.observe_pod(pod("a", "a-2", unschedulable=True), 2.0)
    assert timeline.partial.now == {"a"}
    timeline.observe_pod(pod("a", "a-2", node="n2"), 5.0)
    assert timeline.partial.now == set()
    assert timeline.partial.seconds["a"] == 3.0
    assert timeline.partial.max_at_once == 1


def test_a_sibling_waiting_in_the_queue_is_not_a_partial_start() -> None:
    timeline = Timeline({"a": 2})
    timeline.observe_pod(pod("a", "a-1", node="n1"), 1.0)
    timeline.observe_pod(pod("a", "a-2"), 1.0)
    assert timeline.partial.max_at_once == 0


def test_a_gated_sibling_counts_until_its_gang_is_admitted() -> None:
    timeline = Timeline({"a": 2, "b": 2})
    timeline.observe_gang("b", admitted=True, at=0.5)
    for job in ("a", "b"):
        timeline.observe_pod(pod(job, f"{job}-1", node="n1"), 1.0)
        timeline.observe_pod(pod(job, f"{job}-2", gated=True), 1.0)
    assert timeline.partial.now == {"a"}
    timeline.observe_gang("a", admitted=True, at=2.0)
    assert timeline.partial.now == set()


def test_jobs_still_partial_at_the_end_count_until_it() -> None:
    timeline = Timeline({"a": 2, "b": 2})
    for job in ("a", "b"):
        timeline.observe_pod(pod(job, f"{job}-1", node="n1"), 1.0)
        timeline.observe_pod(pod(job, f"{job}-2", unschedulable=True), 2.0)
    timeline.close(10.0)
    timeline.close(10.0)
    assert timeline.partial.max_at_once == 2
    assert timeline.partial.seconds["a"] == 8.0


def test_first_bind_and_first_running_are_kept() -> None:
    timeline = Timeline({"a": 1})
    timeline.observe_pod(pod("a", "a-1", node="n1"), 1.0)
    timeline.observe_pod(pod("a", "a-1", node="n1", phase="Running"), 2.0)
    timeline.observe_pod(pod("a", "a-1", node="n1", phase="Running"), 3.0)
    record = timeline.jobs["a"]
    assert (record.all_bound_at, record.all_running_at) == (1.0, 2.0)
    assert timeline.last_progress_at == 2.0


def test_pods_of_other_jobs_are_ignored() -> None:
    timeline = Timeline({"a": 1})
    timeline.observe_pod(pod("z", "z-1", node="n1"), 1.0)
    assert timeline.bound_pods == 0
