"""Required node affinity and nodeSelector, evaluated for all nodes at once.

Terms are ORed, the requirements inside a term ANDed; a term with no requirements
matches no node, as in kube-scheduler. A requirement the API server would reject (for
instance `Gt` with two values) makes its term match nothing rather than everything,
so a malformed pod is kept off nodes instead of landing anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from muster.scheduler.rules.labels import LabelIndex, parse_int64

BoolArray = npt.NDArray[np.bool_]

OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
NODE_NAME_FIELD = "metadata.name"


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Term:
    match_expressions: tuple[Requirement, ...]
    match_fields: tuple[Requirement, ...]


def _label_requirement(requirement: Requirement, labels: LabelIndex) -> BoolArray:
    values = labels.values_of(requirement.key)
    present = values >= 0
    operator = requirement.operator
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return ~present
    if operator in ("In", "NotIn"):
        wanted = np.array(labels.ids_of(requirement.key, requirement.values), dtype=np.int32)
        inside = present & np.isin(values, wanted)
        return inside if operator == "In" else ~inside
    bound = parse_int64(requirement.values[0]) if len(requirement.values) == 1 else None
    if bound is None:
        return np.zeros(labels.size, dtype=np.bool_)
    numbers, parsed = labels.integers_of(requirement.key)
    if operator == "Gt":
        return parsed & (numbers > bound)
    return parsed & (numbers < bound)


def _field_requirement(requirement: Requirement, labels: LabelIndex) -> BoolArray:
    if requirement.key != NODE_NAME_FIELD or requirement.operator not in ("In", "NotIn"):
        return np.zeros(labels.size, dtype=np.bool_)
    inside = np.isin(labels.name_ids(), labels.name_ids_of(requirement.values))
    return inside if requirement.operator == "In" else ~inside


def _term_matches(term: Term, labels: LabelIndex) -> BoolArray:
    if not term.match_expressions and not term.match_fields:
        return np.zeros(labels.size, dtype=np.bool_)
    matches = np.ones(labels.size, dtype=np.bool_)
    for requirement in term.match_expressions:
        if requirement.operator not in OPERATORS:
            return np.zeros(labels.size, dtype=np.bool_)
        matches &= _label_requirement(requirement, labels)
    for requirement in term.match_fields:
        matches &= _field_requirement(requirement, labels)
    return matches


def matching_nodes(
    node_selector: tuple[tuple[str, str], ...],
    required_terms: tuple[Term, ...] | None,
    labels: LabelIndex,
) -> BoolArray:
    """Nodes that satisfy both the nodeSelector and the required affinity (None: no affinity)."""
    matches = np.ones(labels.size, dtype=np.bool_)
    for key, value in node_selector:
        matches &= labels.values_of(key) == labels.id_of(key, value)
    if required_terms is not None:
        any_term = np.zeros(labels.size, dtype=np.bool_)
        for term in required_terms:
            any_term |= _term_matches(term, labels)
        matches &= any_term
    return matches
