"""One log line per decision, in the engine's words: admitted where, preempted for
whom, rolled back why, released onto which nodes; none for a verdict."""

from __future__ import annotations

from muster.operator.execution.decision_log import decision_line, notice_lines
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.plan import Notice, Plan, StepKind
from tests.unit.scheduler.builders import cluster, gang, node, pod, pod_group
from tests.unit.scheduler.fake_api import FakeApi

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _lines(plan: Plan) -> list[str]:
    lines = (decision_line(step, plan) for step in plan.steps)
    return [line for line in lines if line is not None]


def test_an_admission_says_where_and_a_verdict_says_nothing() -> None:
    zone = {"topology.kubernetes.io/zone": "a"}
    state = cluster(
        node("n1", gpu="2", labels=zone),
        node("n2", gpu="2", labels=zone),
        *gang("train", 4, gpu="1", topology_key="topology.kubernetes.io/zone"),
        *gang("big", 9, gpu="1", created="2026-01-01T00:00:01Z"),
    )
    plan = schedule(state, now=NOW, config=EngineConfig()).plan
    assert _lines(plan) == [
        "PodGroup default/train admitted: 4 pods placed in topology.kubernetes.io/zone=a; "
        "released 4 pod(s) onto n1, n2"
    ]


def test_a_preemption_names_its_victims() -> None:
    state = cluster(
        node("n1", gpu="2"),
        pod_group(
            "low", min_count=2, priority=1, admitted=True, plan={"low-0": "n1", "low-1": "n1"}
        ),
        pod("low-0", group="low", gpu="1", node_name="n1", priority=1, gated=False),
        pod("low-1", group="low", gpu="1", node_name="n1", priority=1, gated=False),
        *gang("urgent", 2, gpu="1", priority=100),
    )
    plan = schedule(state, now=NOW, config=EngineConfig()).plan
    assert [step.kind for step in plan.steps if decision_line(step, plan)] == [StepKind.PREEMPT]
    assert _lines(plan) == [
        "PodGroup default/urgent admitted by preempting 2 pod(s) of default/low: "
        "2 pods placed; its pods are released once they have left"
    ]


def test_a_rollback_says_why() -> None:
    api = FakeApi(now=NOW, config=EngineConfig(release_timeout=60.0, rollback_backoff=10.0))
    api.add_node(cpu=4)
    api.add_gang("slow", size=2, min_count=2, cpu=2)
    api.cycle()  # admitted and released; kube-scheduler never binds
    api.now = NOW + 61
    [line] = _lines(api.cycle().plan)
    assert line.startswith(
        "PodGroup default/slow rolled back: 2 pod(s) not bound within 60s of release"
    )


def test_the_pods_of_one_missing_pod_group_are_one_line() -> None:
    """Not one per pod: a Workload of eight pods waiting for its PodGroup is one line."""
    missing = "PodGroup train does not exist in namespace ml; the pod stays gated"
    pods = [Notice("Pod", "ml", f"train-{i}", "", "PodGroupNotFound", missing) for i in range(8)]
    other = Notice("Node", "", "n1", "7", "IgnoredByScheduler", "cannot use this Node")
    assert notice_lines([*pods, other]) == [
        f"8 Pods in ml (train-0, train-1, train-2 and 5 more): {missing}",
        "Node n1: cannot use this Node",
    ]
