"""Reading fields of plain Kubernetes objects, failing with the field's name.

Shared by the modules that turn objects into records (`intake`, `pod_terms`), so a
malformed object is refused with the same wording wherever it is read.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from functools import lru_cache
from typing import Any, TypeVar, cast

from muster.api.keys import shared

_Value = TypeVar("_Value", bound=Hashable)

# How many distinct values `canonical` and `shared_string_map` remember: far more than
# the pod templates a cluster runs at once, and a bound on what a stream of unique
# values costs.
RECENT_VALUES = 4096


class IntakeError(ValueError):
    """An object the engine cannot use; the message says which field and why."""


def mapping_field(value: object, where: str) -> Mapping[str, Any]:
    if type(value) is dict:  # the common case, without the slower ABC check
        return value
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise IntakeError(f"{where} must be a mapping")
    return value


def list_field(value: object, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise IntakeError(f"{where} must be a list")
    return value


def canonical(value: _Value) -> _Value:
    """The first of the recent values equal to this one. A Job's pods are parsed one by
    one from their own JSON but share what their template gives them (requests,
    placement rules, inter-pod rules); 50,000 records then hold a few hundred copies
    between them instead of one each."""
    return cast(_Value, _first_equal(value))


@lru_cache(maxsize=RECENT_VALUES)
def _first_equal(value: Hashable) -> Hashable:
    return value


def shared_string_map(value: object, where: str) -> Mapping[str, str]:
    """`string_map`, one mapping for equal ones (the labels of a Job's pods, when no
    index tells them apart). Never to be changed: records that share it are frozen."""
    return _mapping_of(tuple(string_map(value, where).items()))


@lru_cache(maxsize=RECENT_VALUES)
def _mapping_of(items: tuple[tuple[str, str], ...]) -> Mapping[str, str]:
    return dict(items)


def shared_json(value: object) -> Any:
    """A copy of a JSON value whose keys and strings are `shared`: for a status kept
    for every gang, whose condition types, reasons, times and node names repeat."""
    if isinstance(value, dict):
        return {shared(key): shared_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shared_json(item) for item in value]
    return shared(value) if isinstance(value, str) else value


def string_map(value: object, where: str) -> dict[str, str]:
    return {shared(key): shared(item) for key, item in mapping_field(value, where).items()}


def integer_field(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise IntakeError(f"{where} must be an integer")
    return value
