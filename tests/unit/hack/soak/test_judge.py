from datetime import UTC, datetime, timedelta
from typing import Any

from hack.soak.judge import (
    PlacementJudge,
    Violation,
    allocatable_of,
    charged_failures,
    lost_jobs,
    non_leader_writes,
    requests_of,
    where_it_stands,
)

from tests.e2e.faults.faults import Request

GPU = "nvidia.com/gpu"
NODE = {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "1", GPU: "4", "pods": "3"}}}


def pod_asking(gpus: int) -> dict[str, object]:
    return {
        "spec": {
            "containers": [{"resources": {"requests": {"cpu": "100m"}, "limits": {GPU: str(gpus)}}}]
        }
    }


def judge() -> PlacementJudge:
    placement = PlacementJudge()
    placement.node("n", allocatable_of(NODE))
    return placement


def test_requests_count_limits_where_no_request_is_given_and_one_pod() -> None:
    assert requests_of(pod_asking(2)) == {"pods": 1, "cpu": 100, GPU: 2}
    assert allocatable_of(NODE) == {"cpu": 1000, GPU: 4, "pods": 3}


def test_a_node_over_committed_is_caught_at_the_observation_that_overcommits_it() -> None:
    placement = judge()

    def bind(pod: str, gpus: int, at: float) -> list[Violation]:
        asks = requests_of(pod_asking(gpus))
        return placement.pod(pod, node="n", pinned="n", finished=False, requests=asks, at=at)

    assert bind("a", 2, at=1) == []
    assert bind("b", 2, at=2) == []
    [found] = bind("c", 1, at=3)
    assert (found.invariant, found.subject, found.at) == ("over-committed", "n", 3)
    assert "nvidia.com/gpu: 5 bound > 4 allocatable (a, b, c)" in found.detail


def test_finished_and_deleted_pods_free_their_share_and_the_node_may_fill_again() -> None:
    placement = judge()
    asks = requests_of(pod_asking(2))
    placement.pod("a", node="n", pinned=None, finished=False, requests=asks, at=1)
    placement.pod("b", node="n", pinned=None, finished=False, requests=asks, at=2)
    assert placement.pod("a", node="n", pinned=None, finished=True, requests=asks, at=3) == []
    assert placement.pod("c", node="n", pinned=None, finished=False, requests=asks, at=4) == []
    assert placement.gone("b", at=5) == []
    assert placement.pod("d", node="n", pinned=None, finished=False, requests=asks, at=6) == []


def test_an_over_commit_is_reported_once_while_it_lasts() -> None:
    placement = judge()
    asks = requests_of(pod_asking(3))
    placement.pod("a", node="n", pinned=None, finished=False, requests=asks, at=1)
    assert len(placement.pod("b", node="n", pinned=None, finished=False, requests=asks, at=2)) == 1
    assert placement.pod("b", node="n", pinned=None, finished=False, requests=asks, at=3) == []


def test_a_pod_bound_elsewhere_than_its_pin_is_caught_once() -> None:
    placement = judge()
    asks = requests_of(pod_asking(1))
    assert placement.pod("a", node=None, pinned="n", finished=False, requests=asks, at=1) == []
    [found] = placement.pod("a", node="m", pinned="n", finished=False, requests=asks, at=2)
    assert (found.invariant, found.detail) == ("bound-elsewhere", "released for n, bound to m")
    assert placement.pod("a", node="m", pinned="n", finished=True, requests=asks, at=3) == []


def test_failures_beyond_the_soaks_own_deletions_are_charged_to_muster() -> None:
    found = charged_failures({"j1": 1, "j2": 2, "j3": 0}, {"j1": 1, "j2": 1}, at=600)
    assert [(v.subject, v.detail) for v in found] == [("j2", "2 failed pods, 1 deleted by faults")]


def test_a_job_is_lost_only_when_submitted_long_enough_before_the_end() -> None:
    submitted = {"old": 100.0, "done": 50.0, "young": 400.0}
    found = lost_jobs(submitted, ["done"], end=600.0)
    assert [v.subject for v in found] == ["old"]


def test_a_lost_job_says_where_it_stood_at_the_end() -> None:
    job = {"status": {"active": 2, "failed": 1}}
    group = {
        "status": {
            "conditions": [
                {"type": "PodGroupScheduled", "reason": "Unschedulable", "message": "0/8 nodes"}
            ]
        }
    }
    pods: list[dict[str, Any]] = [
        {"metadata": {"name": "j-b"}, "spec": {"schedulingGates": [{"name": "g"}]}},
        {
            "metadata": {"name": "j-a", "deletionTimestamp": "now"},
            "spec": {"nodeName": "n1"},
            "status": {"phase": "Running"},
        },
    ]
    state = where_it_stands(job, group, pods)
    assert state == (
        "Job active 2, failed 1; PodGroup Unschedulable: 0/8 nodes; "
        "pods: j-a Running on n1 deleting; j-b ? on no node gated"
    )
    assert where_it_stands({}, None, []) == "Job no counts; PodGroup no PodGroup; pods: none"
    found = lost_jobs({"j": 1.0}, [], end=600.0, states={"j": state})
    assert found[0].detail == f"submitted at +1s, not complete at the end; at the end: {state}"


def write(agent: str, resource: str, at: int, code: int = 200, name: str = "x") -> Request:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return Request("patch", agent, resource, name, code, start + timedelta(seconds=at))


def test_writes_are_allowed_only_from_the_replica_whose_lease_write_landed_last() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    log = [
        write("muster/a", "leases", 0, name="muster-operator"),
        write("muster/a", "pods", 1),
        write("muster/b", "leases", 2, code=409, name="muster-operator"),  # refused
        write("muster/b", "pods", 3),  # b does not lead
        write("muster/b", "leases", 4, name="muster-operator"),  # the takeover
        write("muster/b", "pods", 5),
        write("muster/a", "podgroups", 6),  # a, thawed, writes after the takeover
        write("muster/a", "pods", 7, code=409),  # refused: did not land
        write("kube-scheduler/v1", "pods", 8),  # another client
        write("muster/a", "secrets", 9, name="muster-webhook-tls"),  # serving its webhooks
    ]
    found = non_leader_writes(log, start)
    assert [(v.subject, v.at, v.detail) for v in found] == [
        ("b", 3.0, "patch pods/x while a led"),
        ("a", 6.0, "patch podgroups/x while b led"),
    ]
