"""CEL selectors of DeviceClasses and device requests, evaluated on one device.

Dynamic Resource Allocation picks devices with CEL expressions over a `device`
variable: `device.driver`, `device.attributes["<domain>"].<name>` and
`device.capacity["<domain>"].<name>` (a quantity), as kube-scheduler's allocator
(`k8s.io/dynamic-resource-allocation/cel`) exposes them. Expressions are compiled
once with a maintained CEL library (cel-python), and a device is judged by its
*kind*: its driver, attributes and capacity, all a selector can see. Thousands of
devices of a few kinds then cost a few evaluations. Drivers give each device
attributes of its own (a UUID, a PCI address), so a kind is first narrowed to the
attributes and capacities the expressions name (`read_names`): every device then
has the same few narrowed kinds.

Quantities are the Kubernetes CEL library's `quantity("40Gi")`, compared with
`compareTo`, `isGreaterThan`, `isLessThan` (as numbers, in base units, rounded up).
An expression that fails at run time (an attribute the device lacks, without
`has()` or `.?`) selects nothing, as it makes kube-scheduler's allocation fail.

An evaluation is judged once (`judge`): parsed (an expression cel-python cannot
parse is judged so) and run under a cost limit (`selector_cost`); the engine reads
only judgements (`selects`): each expression with the kind narrowed to what it
reads is a `Case`, which the engine never parses nor evaluates itself. The operator
judges cases in a process of its own, where a wall-clock budget also holds
(`TIME_BUDGET`); the offline commands judge them in place, to the same judgements,
as a case within the cost limit ends far within the time budget.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from math import ceil
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from muster.scheduler.devices.selector_cost import (
    COST_LIMIT,
    CostLimitExceededError,
    MeteredRunner,
)
from muster.scheduler.objects.quantity import QuantityError, parse_quantity

Value = bool | int | str
Attributes = tuple[tuple[str, Value], ...]  # qualified name -> value, sorted
Capacity = tuple[tuple[str, int], ...]  # qualified name -> amount in base units, sorted

# Seconds one evaluation may take in the operator's judging process before it is
# stopped: ten times what one at the cost limit takes there on a busy machine. It
# bounds what the cost count cannot see (the work a function does inside one call,
# which the count charges as one unit whatever its arguments' length; a machine far
# slower than the one measured; a process that hangs), and only the operator has it:
# offline, the cost limit alone decides, to the same judgements.
TIME_BUDGET = 5.0


class SelectorError(ValueError):
    """A CEL expression that does not compile."""


@dataclass(frozen=True, slots=True)
class DeviceKind:
    """All a selector sees of a device: equal kinds are selected alike."""

    driver: str
    attributes: Attributes
    capacity: Capacity


def _quantity(text: celtypes.Value) -> celtypes.IntType:
    try:
        return celtypes.IntType(ceil(parse_quantity(str(text))))
    except QuantityError as error:
        raise ValueError(f"quantity: {error}") from error


def _number(value: object) -> int:
    if not isinstance(value, int):
        raise TypeError("a quantity was expected")
    return value


def _compare(left: object, right: object) -> celtypes.IntType:
    a, b = _number(left), _number(right)
    return celtypes.IntType((a > b) - (a < b))


_FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: celtypes.BoolType(_number(a) > _number(b)),
    "isLessThan": lambda a, b: celtypes.BoolType(_number(a) < _number(b)),
    "asInteger": lambda a: celtypes.IntType(_number(a)),
}


class Judgement(StrEnum):
    """What an evaluation of one expression on one kind of device came to."""

    SELECTS = "selects"
    REJECTS = "rejects"  # false, not a boolean, or failed
    OVER_COST = "over-cost"  # stopped at the cost limit
    OVER_TIME = "over-time"  # stopped at the time budget (the operator's process)
    UNCOMPILED = "uncompiled"  # cel-python cannot parse it (cel-go, which admitted it, can)

    @property
    def stops(self) -> bool:
        """Whether the claim cannot be allocated at all: kube-scheduler's allocation
        fails on an evaluation error, and so does Muster's on these."""
        return self in (Judgement.OVER_COST, Judgement.OVER_TIME, Judgement.UNCOMPILED)


@lru_cache(maxsize=1)
def _environment() -> celpy.Environment:
    """Made when a first expression is compiled (building its parser takes a quarter
    of a second, which every command and the webhooks need not pay)."""
    return celpy.Environment(runner_class=MeteredRunner)


@lru_cache(maxsize=1024)
def compiled(expression: str) -> MeteredRunner:
    """The expression's program (raises `SelectorError` when it does not compile)."""
    environment = _environment()
    try:
        program = environment.program(environment.compile(expression), functions=_FUNCTIONS)
    except (CELParseError, RecursionError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise SelectorError(f"CEL expression does not compile: {first}") from error
    assert isinstance(program, MeteredRunner)
    return program


def _by_domain(items: tuple[tuple[str, Any], ...], driver: str) -> dict[str, dict[str, Any]]:
    """Qualified names grouped by domain; a bare name is in the driver's domain."""
    grouped: dict[str, dict[str, Any]] = {}
    for qualified, value in items:
        domain, _, name = qualified.rpartition("/")
        grouped.setdefault(domain or driver, {})[name] = value
    return grouped


def _activation(kind: DeviceKind) -> Mapping[str, celtypes.Value]:
    device = {
        "driver": kind.driver,
        "attributes": _by_domain(kind.attributes, kind.driver),
        "capacity": _by_domain(kind.capacity, kind.driver),
        "allowMultipleAllocations": False,
    }
    return {"device": json_to_cel(device)}


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a name is a C identifier
_ITERATES = re.compile(r"\b(all|exists|exists_one|map|filter|size)\s*\(")


@lru_cache(maxsize=1024)
def read_names(expressions: tuple[str, ...]) -> frozenset[str] | None:
    """The names of attributes and capacities the expressions may read: every word in
    them (identifiers, and the text of string literals); None when one iterates or
    measures a map, which reads names it does not spell."""
    text = " ".join(expressions)
    if _ITERATES.search(text):
        return None
    return frozenset(_WORD.findall(text))


def _narrowed(kind: DeviceKind, names: frozenset[str] | None) -> DeviceKind:
    """The kind with only the attributes and capacities these names can reach."""
    if names is None:
        return kind
    return DeviceKind(
        kind.driver,
        tuple(item for item in kind.attributes if item[0].rpartition("/")[2] in names),
        tuple(item for item in kind.capacity if item[0].rpartition("/")[2] in names),
    )


Case = tuple[str, DeviceKind]  # an expression, and a kind narrowed to what it reads


@lru_cache(maxsize=65536)
def case_of(expression: str, kind: DeviceKind) -> Case:
    """The case that decides whether the expression selects a device of this kind."""
    return expression, _narrowed(kind, read_names((expression,)))


def judge(case: Case, limit: int = COST_LIMIT) -> Judgement:
    """Evaluate the expression on the kind, stopping at the cost limit."""
    expression, kind = case
    try:
        program = compiled(expression)
    except SelectorError:
        return Judgement.UNCOMPILED
    try:
        result = program.evaluate_within(_activation(kind), limit)
    except CostLimitExceededError:
        return Judgement.OVER_COST
    except (CELEvalError, ValueError, TypeError, RecursionError):
        return Judgement.REJECTS
    if isinstance(result, celtypes.BoolType) and result:
        return Judgement.SELECTS
    return Judgement.REJECTS


def selects(
    expressions: tuple[str, ...], kind: DeviceKind, judged: Mapping[Case, Judgement]
) -> bool:
    """Whether every expression selects a device of this kind, as judged (one not
    judged yet selects nothing)."""
    return all(judged.get(case_of(e, kind)) is Judgement.SELECTS for e in expressions)
