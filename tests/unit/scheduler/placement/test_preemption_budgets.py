"""Preemption weighs PodDisruptionBudgets as kube-scheduler does, gang by gang: victims
that violate no budget are chosen when they suffice; when only protected victims can
make room they are preempted all the same (as few as possible), must go whole, and
the preemptor says so."""

from __future__ import annotations

from muster.api.keys import GroupKey, PodKey
from muster.scheduler import schedule
from muster.scheduler.decisions.plan import Evict, StepKind
from muster.scheduler.decisions.results import Admission
from tests.unit.scheduler.builders import Obj, budget, cluster, gang, node, pod
from tests.unit.scheduler.placement.test_preemption import CONFIG, NOW, running, victims_of

GROUP = "scheduling.muster.dev/pod-group"


def protected(allowed: int = 1) -> Obj:
    """minAvailable 3 over the 4 running pods of gang `a`: one may go."""
    return budget("keep-a", {GROUP: "a"}, allowed=allowed)


def four_nodes() -> list[Obj]:
    return [node(f"n{index}", gpu="4") for index in range(4)]


def admitted(objects: list[Obj]) -> Admission:
    (admission,) = schedule(cluster(*objects), now=NOW, config=CONFIG).admissions
    return admission


def test_the_gang_no_budget_protects_is_chosen_although_it_ranks_dearer() -> None:
    """Without the budget gang `a` (fewer pods, first by name) would be the victim."""
    objects = [
        *four_nodes(),
        node("n4", gpu="4"),
        *running("a", ["n0", "n1"], priority=1, gpu="4"),
        *running("b", ["n2", "n3", "n4"], priority=1, gpu="4"),
        *gang("high", 2, gpu="4", priority=10),
    ]
    assert victims_of(admitted(objects)) == ["a-0", "a-1"]
    admission = admitted([*objects, protected()])
    assert victims_of(admission) == ["b-0", "b-1", "b-2"]
    assert not admission.violations


def test_a_budget_that_allows_the_whole_gang_protects_nothing() -> None:
    objects = [
        *four_nodes(),
        *running("a", ["n0", "n1"], priority=1),
        *running("b", ["n2", "n3"], priority=1),
        *gang("high", 2, gpu="4", priority=10),
        protected(allowed=2),
    ]
    admission = admitted(objects)
    assert victims_of(admission) == ["a-0", "a-1"]
    assert not admission.violations


def test_only_protected_victims_can_make_room_so_they_are_preempted_and_must_go() -> None:
    objects = [
        *four_nodes(),
        *running("a", ["n0", "n1", "n2", "n3"], priority=1),
        *gang("high", 4, gpu="4", priority=10),
        protected(),
    ]
    result = schedule(cluster(*objects), now=NOW, config=CONFIG)
    (admission,) = result.admissions
    assert victims_of(admission) == ["a-0", "a-1", "a-2", "a-3"]
    assert len(admission.violations.pods) == 3
    assert admission.violations.budgets == ("default/keep-a",)
    assert all(victim.must_go for victim in admission.victims)
    [step] = [s for s in result.plan.steps if s.kind is StepKind.PREEMPT]
    evictions = [action for action in step.actions if isinstance(action, Evict)]
    assert evictions == [Evict(tuple(PodKey("default", f"a-{i}") for i in range(4)), force=True)]
    high = result.plan.statuses[GroupKey("default", "high")]
    [scheduled] = [c for c in high["conditions"] if c["type"] == "PodGroupScheduled"]
    assert "against PodDisruptionBudget default/keep-a: 3 victim pod(s)" in scheduled["message"]
    victim = result.plan.statuses[GroupKey("default", "a")]
    [taken] = [c for c in victim["conditions"] if c["type"] == "PodGroupScheduled"]
    assert taken["reason"] == "Preempted"
    assert "against PodDisruptionBudget default/keep-a" in taken["message"]


def plain(name: str, on: str, *, priority: int, app: str) -> list[Obj]:
    """A node taken whole by one plain pod labelled `app`."""
    return [
        node(on, gpu="4"),
        pod(name, gpu="4", node_name=on, priority=priority, labels={"app": app}),
    ]


def test_a_pod_no_budget_protects_goes_first_even_at_a_higher_priority() -> None:
    """kube-scheduler picks the node with the fewest PDB violations before the one
    with the lowest victim priority."""
    objects = [
        *plain("cheap", "n0", priority=1, app="db"),
        *plain("dear", "n1", priority=5, app="web"),
        *gang("high", 1, gpu="4", priority=10),
        budget("db", {"app": "db"}, allowed=0),
    ]
    admission = admitted(objects)
    assert victims_of(admission) == ["dear"]
    assert not admission.victims[0].must_go  # a plain pod the budget does not protect


def test_a_refusal_of_a_victim_the_engine_believed_free_is_honoured() -> None:
    """A plain victim that violates nothing is evicted without force: if its budget
    changed meanwhile and refuses, the preemptor waits (and rolls back in time)."""
    objects = [*plain("plain", "n0", priority=1, app="web"), *gang("high", 1, gpu="4", priority=10)]
    result = schedule(cluster(*objects), now=NOW, config=CONFIG)
    [step] = [s for s in result.plan.steps if s.kind is StepKind.PREEMPT]
    assert [a for a in step.actions if isinstance(a, Evict)] == [
        Evict((PodKey("default", "plain"),), force=False)
    ]


def test_budgets_shared_by_several_victims_are_counted_together() -> None:
    """Two single pods, each allowed alone, break a budget of one together: the one
    counted beyond it must go, and the preemptor says so."""
    objects = [
        *plain("w0", "n0", priority=1, app="web"),
        *plain("w1", "n1", priority=1, app="web"),
        *gang("high", 2, gpu="4", priority=10),
        budget("web", {"app": "web"}, allowed=1),
    ]
    admission = admitted(objects)
    assert victims_of(admission) == ["w0", "w1"]
    assert len(admission.violations.pods) == 1
    assert [victim.must_go for victim in admission.victims].count(True) == 1


def test_a_victim_gang_left_running_after_a_refusal_is_taken_down_whole() -> None:
    """The cycle after the preemption was written (its evictions refused part-way):
    the victim gang's own step takes down every pod it still runs, deleting what is
    refused, and the preemptor waits without evicting them a second time."""
    objects = [
        *four_nodes(),
        *running("a", ["n0", "n1", "n2", "n3"], priority=1),
        *gang("high", 4, gpu="4", priority=10),
        protected(allowed=0),
    ]
    state = cluster(*objects)
    first = schedule(state, now=NOW, config=CONFIG)
    for obj in objects:
        key = GroupKey("default", obj["metadata"]["name"])
        if obj["kind"] == "PodGroup" and key in first.plan.statuses:
            state.apply("PodGroup", {**obj, "status": first.plan.statuses[key]})
    state.delete("Pod", "default", "a-0")  # the one eviction the budget let through
    second = schedule(state, now=NOW + 1, config=CONFIG)
    steps = {step.group.name: step for step in second.plan.steps}
    assert steps["a"].kind is StepKind.TAKE_DOWN
    remaining = tuple(PodKey("default", f"a-{i}") for i in (1, 2, 3))
    assert [a for a in steps["a"].actions if isinstance(a, Evict)] == [Evict(remaining, True)]
    assert not [a for a in steps["high"].actions if isinstance(a, Evict)]
