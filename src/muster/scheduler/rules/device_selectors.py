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
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from math import ceil
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from muster.scheduler.objects.quantity import QuantityError, parse_quantity

Value = bool | int | str
Attributes = tuple[tuple[str, Value], ...]  # qualified name -> value, sorted
Capacity = tuple[tuple[str, int], ...]  # qualified name -> amount in base units, sorted


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


@lru_cache(maxsize=1)
def _environment() -> celpy.Environment:
    """Made when a first expression is compiled (building its parser takes a quarter
    of a second, which every command and the webhooks need not pay)."""
    return celpy.Environment()


@lru_cache(maxsize=1024)
def compiled(expression: str) -> celpy.Runner:
    """The expression's program (raises `SelectorError` when it does not compile)."""
    environment = _environment()
    try:
        return environment.program(environment.compile(expression), functions=_FUNCTIONS)
    except CELParseError as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise SelectorError(f"CEL expression does not compile: {first}") from error


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


def selects(expressions: tuple[str, ...], kind: DeviceKind) -> bool:
    """Whether every expression selects a device of this kind."""
    return _selects(expressions, _narrowed(kind, read_names(expressions)))


@lru_cache(maxsize=65536)
def _selects(expressions: tuple[str, ...], kind: DeviceKind) -> bool:
    activation = _activation(kind)
    for expression in expressions:
        try:
            result = compiled(expression).evaluate(activation)
        except (CELEvalError, SelectorError, ValueError, TypeError):
            return False
        if not isinstance(result, celtypes.BoolType) or not result:
            return False
    return True
