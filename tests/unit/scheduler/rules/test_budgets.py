"""PodDisruptionBudgets as preemption reads them: which pods a budget counts, and when
taking victims breaks it (kube-scheduler's FilterVictimsWithPDBViolation)."""

from __future__ import annotations

import pytest

from muster.api.keys import PodKey
from muster.scheduler.objects.fields import IntakeError
from muster.scheduler.rules.budgets import Budget, BudgetLedger, violations
from muster.scheduler.state.kinds import budget_from
from muster.scheduler.state.state import ClusterState
from tests.unit.scheduler.builders import budget

APP = {"app": "train"}


def record(**changes: object) -> Budget:
    return budget_from(budget("pdb", APP, **changes))  # type: ignore[arg-type]


def test_a_budget_counts_the_pods_its_selector_matches_in_its_namespace() -> None:
    pdb = record(allowed=1)
    assert pdb.covers(PodKey("default", "a"), {"app": "train", "x": "y"})
    assert not pdb.covers(PodKey("other", "a"), APP)
    assert not pdb.covers(PodKey("default", "a"), {"app": "serve"})


def test_pods_without_labels_and_empty_or_absent_selectors_match_nothing() -> None:
    assert not record(allowed=0).covers(PodKey("default", "a"), {})
    empty = budget_from(budget("pdb", {}, allowed=0))
    absent = budget_from(budget("pdb", None, allowed=0))
    assert not empty.covers(PodKey("default", "a"), APP)
    assert not absent.covers(PodKey("default", "a"), APP)


def test_a_pod_whose_eviction_the_budget_admitted_is_not_counted_again() -> None:
    pdb = record(allowed=0, disrupted=("a",))
    assert not pdb.covers(PodKey("default", "a"), APP)
    assert pdb.covers(PodKey("default", "b"), APP)


def test_a_budget_not_yet_counted_by_its_controller_allows_nothing() -> None:
    raw = budget("pdb", APP, allowed=3)
    del raw["status"]
    assert budget_from(raw).disruptions_allowed == 0


def test_a_malformed_budget_is_rejected_and_forgotten() -> None:
    state = ClusterState()
    assert state.apply("PodDisruptionBudget", budget("pdb", APP, allowed=1)).rejected is None
    bad = budget("pdb", APP, allowed=1)
    bad["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "Near"}]}
    assert state.apply("PodDisruptionBudget", bad).rejected is not None
    assert state.budgets == {}
    with pytest.raises(IntakeError):
        budget_from(bad)


def test_the_ledger_flags_the_pods_taken_beyond_what_a_budget_allows() -> None:
    ledger = BudgetLedger([record(allowed=1)])
    assert ledger.take(PodKey("default", "a"), APP) is None
    assert str(ledger.take(PodKey("default", "b"), APP)) == "default/pdb"
    assert ledger.take(PodKey("default", "c"), {"app": "serve"}) is None


def test_violations_of_a_set_of_victims_share_each_budget() -> None:
    units = [[(PodKey("default", f"g-{i}"), APP) for i in range(4)]]
    broken = violations(units, [record(allowed=1)])
    assert broken.pods == {PodKey("default", f"g-{i}") for i in (1, 2, 3)}
    assert broken.budgets == ("default/pdb",)
    assert not violations(units, [record(allowed=4)])
