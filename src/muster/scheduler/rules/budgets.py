"""PodDisruptionBudgets, as preemption weighs them: which victims a budget protects.

kube-scheduler does not refuse to preempt a pod that a PodDisruptionBudget protects;
it prefers victims that violate no budget (`FilterVictimsWithPDBViolation`,
`pkg/scheduler/framework/preemption/util.go`). A pod is counted against every budget
of its namespace whose selector matches its labels (an absent or empty selector
matches no pod there, and a pod without labels matches none) and that has not
already admitted an eviction of it (`status.disruptedPods`): each such pod takes one
of the budget's `status.disruptionsAllowed`, and a pod that takes one the budget does
not have is a violation. A victim is atomic: a gang (or any unit that falls
together) violates when any of its pods does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from muster.api.keys import PodKey
from muster.scheduler.rules.pod_terms import Selector


@dataclass(frozen=True, slots=True)
class Budget:
    """One PodDisruptionBudget: what preemption reads of it."""

    namespace: str
    name: str
    selector: Selector | None  # None, or no requirement: matches no pod
    disruptions_allowed: int  # status.disruptionsAllowed
    disrupted: frozenset[str] = frozenset()  # status.disruptedPods: evictions admitted

    def covers(self, pod: PodKey, labels: Mapping[str, str]) -> bool:
        if pod.namespace != self.namespace or not labels or self.selector is None:
            return False
        if not self.selector.requirements or pod.name in self.disrupted:
            return False
        return self.selector.matches(labels)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class BudgetLedger:
    """What is left of each budget's disruptionsAllowed as victims are taken in order."""

    def __init__(self, budgets: Iterable[Budget]) -> None:
        self.budgets = sorted(budgets, key=lambda budget: (budget.namespace, budget.name))
        self.left = {budget: budget.disruptions_allowed for budget in self.budgets}

    def take(self, pod: PodKey, labels: Mapping[str, str]) -> Budget | None:
        """Count one victim pod against its budgets; the budget it violates, if any.

        Like kube-scheduler, the count stops at the first budget that goes below zero.
        """
        for budget in self.budgets:
            if budget.covers(pod, labels):
                self.left[budget] -= 1
                if self.left[budget] < 0:
                    return budget
        return None


@dataclass(frozen=True, slots=True)
class Violations:
    """Victim pods taken beyond what their budgets allow, and the budgets they break."""

    pods: frozenset[PodKey] = frozenset()
    budgets: tuple[str, ...] = ()  # "namespace/name", sorted

    def __bool__(self) -> bool:
        return bool(self.pods)


NO_VIOLATIONS = Violations()


def violations(
    units: Sequence[Sequence[tuple[PodKey, Mapping[str, str]]]], budgets: Iterable[Budget]
) -> Violations:
    """The violations of taking these units (most important first) together."""
    ledger = BudgetLedger(budgets)
    broken: set[str] = set()
    pods: set[PodKey] = set()
    for unit in units:
        for pod, labels in unit:
            budget = ledger.take(pod, labels)
            if budget is not None:
                pods.add(pod)
                broken.add(str(budget))
    return Violations(frozenset(pods), tuple(sorted(broken)))
