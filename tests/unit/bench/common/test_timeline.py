from __future__ import annotations

from bench.common.timeline import STUCK_GRACE_S, Timeline

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


def test_pods_behind_kueues_topology_gate_are_in_flight_not_refused() -> None:
    timeline = Timeline({"a": 2})
    timeline.observe_queue("a", admitted=True, evicted=False, topology_assigned=True, at=0.5)
    timeline.observe_pod(pod("a", "a-1", node="n1"), 1.0)
    timeline.observe_pod(pod("a", "a-2", gated=True, gate="kueue.x-k8s.io/topology"), 1.0)
    assert timeline.partial.max_at_once == 0


def test_a_job_admitted_by_kueue_and_refused_a_place_counts_after_the_grace() -> None:
    timeline = Timeline({"brief": 2, "stuck": 2, "queued": 2})
    for job in timeline.jobs:
        admitted = job != "queued"
        timeline.observe_queue(
            job, admitted=admitted, evicted=False, topology_assigned=False, at=0.0
        )
        timeline.observe_pod(pod(job, f"{job}-1", unschedulable=True), 1.0)
    timeline.observe_pod(pod("brief", "brief-1", node="n1"), 1.0 + STUCK_GRACE_S / 2)
    assert timeline.admitted_unschedulable.now == {"stuck"}
    timeline.close(1.0 + STUCK_GRACE_S * 2)
    tracked = timeline.admitted_unschedulable
    assert tracked.max_at_once == 2
    assert tracked.ever == {"stuck"}  # the brief one was churn; the queued one not admitted
    assert tracked.seconds["stuck"] == STUCK_GRACE_S * 2


def test_a_gang_muster_refuses_makes_its_admitted_job_unschedulable() -> None:
    timeline = Timeline({"a": 2})
    timeline.observe_queue("a", admitted=True, evicted=False, topology_assigned=False, at=0.0)
    timeline.observe_pod(pod("a", "a-1", gated=True), 1.0)
    assert timeline.admitted_unschedulable.now == set()  # waiting its turn is not a refusal
    timeline.observe_gang("a", admitted=False, at=2.0, refused=True)
    assert timeline.admitted_unschedulable.now == {"a"}
    timeline.observe_queue(
        "a",
        admitted=False,
        evicted=True,
        topology_assigned=False,
        at=9.0,
        evicted_reason="PodsReadyTimeout",
    )
    assert timeline.admitted_unschedulable.now == set()
    assert timeline.admitted_unschedulable.ever == {"a"}
    assert timeline.jobs["a"].evictions == {"PodsReadyTimeout": 1}


def test_an_eviction_counts_once_however_often_it_is_seen() -> None:
    timeline = Timeline({"a": 1})
    for at in (1.0, 2.0):
        timeline.observe_queue("a", admitted=False, evicted=True, topology_assigned=False, at=at)
    timeline.observe_queue("a", admitted=True, evicted=False, topology_assigned=False, at=3.0)
    timeline.observe_queue("a", admitted=False, evicted=True, topology_assigned=False, at=4.0)
    assert timeline.jobs["a"].evictions == {"unknown": 2}
    assert timeline.jobs["a"].queue_admitted_at == 3.0


def all_at_once(timeline: Timeline, job: str) -> tuple[float | None, ...]:
    record = timeline.jobs[job]
    return (record.all_seen_at, record.all_bound_at, record.all_running_at)


def test_a_job_whose_pods_are_deleted_is_timed_by_the_pods_that_replace_them() -> None:
    timeline = Timeline({"a": 2})
    timeline.observe_pod(pod("a", "a-1", node="n1", phase="Running"), 1.0)
    timeline.forget_pod(pod("a", "a-1", node="n1", phase="Running"), 2.0)  # evicted
    timeline.observe_pod(pod("a", "a-2", node="n1", phase="Running"), 3.0)
    assert all_at_once(timeline, "a") == (None, None, None)
    timeline.observe_pod(pod("a", "a-3", node="n2", phase="Running"), 4.0)
    assert all_at_once(timeline, "a") == (4.0, 4.0, 4.0)
    assert timeline.bound_pods == 3  # every bind is counted, the evicted one's too

    for name in ("a-2", "a-3"):  # evicted again, once all ran
        timeline.forget_pod(pod("a", name, node="n1", phase="Running"), 5.0)
    assert all_at_once(timeline, "a") == (None, None, None)
    timeline.observe_pod(pod("a", "a-4", node="n3", phase="Running"), 6.0)
    timeline.observe_pod(pod("a", "a-5", node="n3", phase="Running"), 7.0)
    assert all_at_once(timeline, "a") == (7.0, 7.0, 7.0)
