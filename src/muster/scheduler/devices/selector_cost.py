"""A cost limit for CEL selectors, counted as cel-python evaluates them.

The API server refuses a selector whose *estimated* worst-case cost exceeds
`API_SERVER_COST_LIMIT` (`resource.k8s.io` validation compares cel-go's
`EstimateCost` with `CELSelectorExpressionMaxCost`, k8s.io/api `resource/v1/types.go`),
and kube-scheduler evaluates each selector on each device with that same number as
its *runtime* cost limit (k8s.io/dynamic-resource-allocation `cel/compile.go`:
`cel.CostLimit(ptr.Deref(options.CostLimit, CELSelectorExpressionMaxCost))`): an
evaluation that exceeds it fails, and so does the allocation of the claim
(`class|claim ...: selector #i: CEL runtime error`).

cel-python has no cost tracking, so it is counted here, as the interpreter visits the
parse tree, in cel-go's units where it has them: 1 for each variable, field, index,
call, operator and comprehension step, 10 for a list literal and 30 for a map literal
(`ListCreateBaseCost`, `MapCreateBaseCost`), and a tenth of the length of every
string or list an operation yields (`StringTraversalCostFactor`). Constants cost
nothing. The count is deterministic: the same expression on the same device stops at
the same step, wherever and however fast it runs.

Muster stops at `COST_LIMIT`, a hundredth of kube-scheduler's. cel-go spends about
0.1 s on its whole limit (the API server's note on the same number as `PerCallLimit`,
k8s.io/apiserver `pkg/apis/cel/config.go`); cel-python is some hundred times slower:
it spent 0.6 s of CPU time on 10,000 units on a busy machine, so kube-scheduler's
limit would hold one evaluation for a minute, per kind of device, and Muster's for
well under a second. Real selectors
cost tens of units (an attribute compared, a quantity measured); the limit still
allows some 800 steps of a comprehension. A selector that kube-scheduler would run
(the API server admits it) but that costs more than `COST_LIMIT` is refused by
Muster, and its claim waits with a reason naming the limit: a gang that waits for a
reason its owner can read, rather than scheduling slowed for every team by seconds
per device.
"""

from __future__ import annotations

from typing import Any

import lark
from celpy import InterpretedRunner, celtypes
from celpy.evaluation import Activation, Evaluator

API_SERVER_COST_LIMIT = 1_000_000  # resource.k8s.io CELSelectorExpressionMaxCost
COST_LIMIT = 10_000

_ALWAYS = {"member_dot": 1, "member_index": 1, "member_dot_arg": 1, "member_object": 40}
_PRIMARY = {
    "ident": 1,
    "ident_arg": 1,
    "dot_ident": 1,
    "dot_ident_arg": 1,
    "list_lit": 10,
    "map_lit": 30,
}
_OPERATORS = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary"}
)
_SIZED = (str, bytes, list, dict)  # cel-python's strings and lists, and plain ones


class CostLimitExceededError(Exception):
    """The evaluation spent more than its limit."""


class Meter:
    """What one evaluation has spent, in cel-go's cost units."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0

    @property
    def exceeded(self) -> bool:
        return self.spent > self.limit

    def charge(self, units: int) -> None:
        self.spent += units
        if self.spent > self.limit:
            raise CostLimitExceededError(f"cost limit {self.limit} exceeded")


def _units(tree: lark.Tree[Any]) -> int:
    """What visiting the node costs by itself (before the size of what it yields)."""
    name = str(tree.data)
    if name in _ALWAYS:
        return _ALWAYS[name]
    if name == "primary":
        child = tree.children[0]
        return _PRIMARY.get(str(child.data), 0) if isinstance(child, lark.Tree) else 0
    if name in _OPERATORS and len(tree.children) > 1:
        return 1
    return 0


class MeteredEvaluator(Evaluator):
    """cel-python's interpreter, charging its meter for every node it evaluates and
    for every step of a comprehension (each builds a nested evaluator)."""

    def __init__(self, ast: lark.Tree[Any], activation: Activation, meter: Meter) -> None:
        super().__init__(ast, activation)
        self.meter = meter

    def sub_evaluator(self, ast: lark.Tree[Any]) -> Evaluator:
        return MeteredEvaluator(ast, self.activation, self.meter)

    def evaluate(self, context: Any = None) -> celtypes.Value:
        self.meter.charge(1 if context else 0)  # a comprehension's step binds its variable
        return super().evaluate(context)

    def _visit_tree(self, tree: lark.Tree[Any]) -> Any:
        units = _units(tree)
        if units:
            self.meter.charge(units)
        value = super()._visit_tree(tree)
        if units and isinstance(value, _SIZED):
            self.meter.charge(len(value) // 10)
        return value


class MeteredRunner(InterpretedRunner):
    """A program whose evaluations each stop once they spend more than the limit."""

    def evaluate_within(self, context: Any, limit: int) -> celtypes.Value:
        """The expression's value; raises `CostLimitExceededError` past the limit."""
        meter = Meter(limit)
        value = MeteredEvaluator(self.ast, self.new_activation(), meter).evaluate(context)
        if meter.exceeded:  # a step that raised inside code that swallowed it
            raise CostLimitExceededError(f"cost limit {limit} exceeded")
        return value
