"""`muster simulate` reads PodDisruptionBudgets from a dump, as the operator's informer
does: the same gang is spared, and one is taken all the same when nothing else makes
room."""

from __future__ import annotations

from typing import Any

from muster.api.constants import POD_GROUP_LABEL
from muster.api.keys import GroupKey
from tests.unit.simulation.test_run import node, outcome, run, running_gang


def budget(group: str, allowed: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"keep-{group}"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {POD_GROUP_LABEL: group}}},
        "status": {"disruptionsAllowed": allowed},
    }


def crowded(*extra: Any) -> list[Any]:
    """Two nodes, each held by an old gang; a new urgent gang needs one of them."""
    urgent = {"kind": "PriorityClass", "metadata": {"name": "urgent"}, "value": 1000}
    gangs = [*running_gang("a"), *running_gang("b")]
    for obj in gangs:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == "b-0":
            obj["spec"]["nodeName"] = "n2"
        if obj["kind"] == "PodGroup" and obj["metadata"]["name"] == "b":
            obj["status"]["plan"] = {"b-0": "n2"}
    high = running_gang("high")[0]
    high["spec"]["template"]["spec"]["priorityClassName"] = "urgent"
    return [node("n1"), node("n2"), urgent, *gangs, high, *extra]


def test_a_dump_with_a_budget_spares_the_gang_it_protects() -> None:
    assert outcome(run(*crowded()), "a").preempted
    report = run(*crowded(budget("a", allowed=0)))
    assert not outcome(report, "a").preempted
    assert outcome(report, "b").preempted
    assert [victim.group for victim in report.victims] == [GroupKey("default", "b")]


def test_a_dump_where_only_protected_gangs_can_make_room_preempts_one_all_the_same() -> None:
    report = run(*crowded(budget("a", allowed=0), budget("b", allowed=0)))
    assert outcome(report, "high").scheduled
    assert [victim.group for victim in report.victims] == [GroupKey("default", "a")]
