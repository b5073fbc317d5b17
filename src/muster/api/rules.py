"""The CEL rules of the CRDs, each paired with its Python equivalent.

A rule is written once, here: the CRD generator copies its expression and message
into ``x-kubernetes-validations``, and `muster validate` and the webhooks run its
``check`` on the same node of the same object. So the API server and the offline
check reject the same manifests with the same words.

Checks receive the JSON value at the node the rule is attached to. A value of
the wrong type passes: the schema's type check reports it, once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from muster.api.constants import (
    HIGHEST_USER_PRIORITY,
    MAX_GANG_SIZE,
    POD_GROUP_LABEL,
)
from muster.api.names import LABEL_NAME_MAX_LENGTH, is_dns_label, is_dns_subdomain, is_label_key


@dataclass(frozen=True, slots=True)
class CelRule:
    """One ``x-kubernetes-validations`` entry and its Python twin.

    ``field_path`` (relative, e.g. ``.minCount``) is where the API server and
    `muster validate` report a failure; without it, at the node itself.
    A rule whose ``check`` takes the old value too is a transition rule: it runs
    only on updates (``oldSelf`` in CEL).
    """

    expression: str
    message: str
    check: Callable[[Any], bool] | None = None
    check_update: Callable[[Any, Any], bool] | None = None
    field_path: str | None = None

    def to_schema(self) -> dict[str, str]:
        """The ``x-kubernetes-validations`` entry."""
        entry = {"rule": self.expression, "message": self.message}
        if self.field_path is not None:
            entry["fieldPath"] = self.field_path
        return entry


def _exactly_one_of(first: str, second: str) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        return not isinstance(value, dict) or (first in value) != (second in value)

    return check


def _string_check(predicate: Callable[[str], bool]) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        return not isinstance(value, str) or predicate(value)

    return check


def _min_count_positive(gang: Any) -> bool:
    count = gang.get("minCount") if isinstance(gang, dict) else None
    return not isinstance(count, int) or count >= 1


def _min_count_at_most_max(gang: Any) -> bool:
    count = gang.get("minCount") if isinstance(gang, dict) else None
    return not isinstance(count, int) or count <= MAX_GANG_SIZE


def _priority_for_users(spec: Any) -> bool:
    priority = spec.get("priority") if isinstance(spec, dict) else None
    return not isinstance(priority, int) or priority <= HIGHEST_USER_PRIORITY


def _field_unchanged(field: str) -> Callable[[Any, Any], bool]:
    def check(new: Any, old: Any) -> bool:
        if not isinstance(new, dict) or not isinstance(old, dict):
            return True
        return (field in new) == (field in old) and new.get(field) == old.get(field)

    return check


def _name_fits_a_label_value(obj: Any) -> bool:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return not isinstance(name, str) or len(name) <= LABEL_NAME_MAX_LENGTH


def _pod_group_names_fit_label_values(workload: Any) -> bool:
    if not _name_fits_a_label_value(workload):
        return False
    name = workload["metadata"].get("name") if isinstance(workload, dict) else None
    spec = workload.get("spec") if isinstance(workload, dict) else None
    templates = spec.get("podGroupTemplates") if isinstance(spec, dict) else None
    if not isinstance(name, str) or not isinstance(templates, list):
        return True
    return all(
        len(name) + 1 + len(template["name"]) <= LABEL_NAME_MAX_LENGTH
        for template in templates
        if isinstance(template, dict) and isinstance(template.get("name"), str)
    )


def _same_policy_kind(new: Any, old: Any) -> bool:
    if not isinstance(new, dict) or not isinstance(old, dict):
        return True
    return ("gang" in new) == ("gang" in old)


def _unique_names(items: Any) -> bool:
    if not isinstance(items, list):
        return True
    names = [item.get("name") for item in items if isinstance(item, dict)]
    return len(names) == len(set(names))


EXACTLY_ONE_POLICY = CelRule(
    expression="has(self.basic) != has(self.gang)",
    message="exactly one of schedulingPolicy.basic or schedulingPolicy.gang must be set",
    check=_exactly_one_of("basic", "gang"),
)

MIN_COUNT_POSITIVE = CelRule(
    expression="self.minCount >= 1",
    message="gang.minCount must be at least 1",
    check=_min_count_positive,
    field_path=".minCount",
)

MIN_COUNT_AT_MOST_MAX_GANG_SIZE = CelRule(
    expression=f"self.minCount <= {MAX_GANG_SIZE}",
    message=(
        f"gang.minCount must be at most {MAX_GANG_SIZE}: a gang's plan is kept in the"
        " PodGroup's status, and a larger one may not fit in an etcd object"
    ),
    check=_min_count_at_most_max,
    field_path=".minCount",
)

PRIORITY_AT_MOST_HIGHEST_USER_PRIORITY = CelRule(
    expression=f"!has(self.priority) || self.priority <= {HIGHEST_USER_PRIORITY}",
    message=(
        f"priority must be at most {HIGHEST_USER_PRIORITY}: higher priorities are reserved"
        " for the system PriorityClasses, which only pods may use"
    ),
    check=_priority_for_users,
    field_path=".priority",
)


def _immutable(field: str) -> CelRule:
    """The rule that keeps `field` of a spec as it was created: set, with its value,
    or unset. Upstream marks a PodGroup's priority fields `+k8s:immutable`, as pod
    validation keeps a pod's; admission fills a field left out of an update from the
    old object, so only a change is refused."""
    return CelRule(
        expression=(
            f"has(self.{field}) == has(oldSelf.{field})"
            f" && (!has(self.{field}) || self.{field} == oldSelf.{field})"
        ),
        message=f"{field} is immutable: it is resolved from the PriorityClass at creation",
        check_update=_field_unchanged(field),
        field_path=f".{field}",
    )


PRIORITY_CLASS_NAME_IMMUTABLE = _immutable("priorityClassName")
PRIORITY_IMMUTABLE = _immutable("priority")
PREEMPTION_POLICY_IMMUTABLE = _immutable("preemptionPolicy")
PRIORITY_FIELDS = ("priorityClassName", "priority", "preemptionPolicy")
"""The spec fields admission resolves from the PriorityClass, and keeps."""

NAME_IS_A_LABEL_VALUE = CelRule(
    expression=f"size(self.metadata.name) <= {LABEL_NAME_MAX_LENGTH}",
    message=(
        f"metadata.name must be at most {LABEL_NAME_MAX_LENGTH} characters: member pods"
        f" carry the PodGroup's name as the value of the label {POD_GROUP_LABEL}, and a"
        f" label value is at most {LABEL_NAME_MAX_LENGTH} characters"
    ),
    check=_name_fits_a_label_value,
    field_path=".metadata.name",
)

POD_GROUP_NAMES_ARE_LABEL_VALUES = CelRule(
    expression=(
        f"size(self.metadata.name) <= {LABEL_NAME_MAX_LENGTH}"
        " && self.spec.podGroupTemplates.all(t,"
        f" size(self.metadata.name) + 1 + size(t.name) <= {LABEL_NAME_MAX_LENGTH})"
    ),
    message=(
        "metadata.name is too long: each template makes a PodGroup named"
        f" <workload>-<template>, whose member pods carry that name as the value of the"
        f" label {POD_GROUP_LABEL}, and a label value is at most {LABEL_NAME_MAX_LENGTH}"
        " characters"
    ),
    check=_pod_group_names_fit_label_values,
    field_path=".metadata.name",
)

POLICY_KIND_IMMUTABLE = CelRule(
    expression="has(self.gang) == has(oldSelf.gang)",
    message=("schedulingPolicy kind (basic or gang) is immutable; only gang.minCount may change"),
    check_update=_same_policy_kind,
)

EXACTLY_ONE_DISRUPTION_MODE = CelRule(
    expression="has(self.single) != has(self.all)",
    message="exactly one of disruptionMode.single or disruptionMode.all must be set",
    check=_exactly_one_of("single", "all"),
)

TOPOLOGY_KEY_IS_LABEL_KEY = CelRule(
    expression="!format.qualifiedName().validate(self).hasValue()",
    message=(
        "topology key must be a valid label key: an optional DNS subdomain prefix and '/',"
        " then at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
    ),
    check=_string_check(is_label_key),
)

TEMPLATE_NAME_IS_DNS_LABEL = CelRule(
    expression="!format.dns1123Label().validate(self).hasValue()",
    message=(
        "podGroupTemplates name must be a DNS label: at most 63 lowercase alphanumerics"
        " or '-', starting and ending alphanumeric"
    ),
    check=_string_check(is_dns_label),
)

TEMPLATE_NAMES_UNIQUE = CelRule(
    expression="self.all(t, self.exists_one(u, u.name == t.name))",
    message="podGroupTemplates names must be unique",
    check=_unique_names,
)

WORKLOAD_REF_TEMPLATE_IS_DNS_LABEL = CelRule(
    expression="!format.dns1123Label().validate(self).hasValue()",
    message="workloadRef.templateName must be a DNS label",
    check=_string_check(is_dns_label),
)

WORKLOAD_REF_NAME_IS_DNS_SUBDOMAIN = CelRule(
    expression="!format.dns1123Subdomain().validate(self).hasValue()",
    message="workloadRef.workloadName must be a DNS subdomain",
    check=_string_check(is_dns_subdomain),
)

WORKLOAD_REF_IMMUTABLE = CelRule(
    expression=(
        "has(self.workloadRef) == has(oldSelf.workloadRef)"
        " && (!has(self.workloadRef) || self.workloadRef == oldSelf.workloadRef)"
    ),
    message="workloadRef is immutable",
    check_update=_field_unchanged("workloadRef"),
    field_path=".workloadRef",
)

PRIORITY_CLASS_NAME_IS_DNS_SUBDOMAIN = CelRule(
    expression="!format.dns1123Subdomain().validate(self).hasValue()",
    message="priorityClassName must be a DNS subdomain (the name of a PriorityClass)",
    check=_string_check(is_dns_subdomain),
)

ALL_RULES: tuple[CelRule, ...] = (
    EXACTLY_ONE_POLICY,
    MIN_COUNT_POSITIVE,
    MIN_COUNT_AT_MOST_MAX_GANG_SIZE,
    PRIORITY_AT_MOST_HIGHEST_USER_PRIORITY,
    PRIORITY_CLASS_NAME_IMMUTABLE,
    PRIORITY_IMMUTABLE,
    PREEMPTION_POLICY_IMMUTABLE,
    NAME_IS_A_LABEL_VALUE,
    POD_GROUP_NAMES_ARE_LABEL_VALUES,
    POLICY_KIND_IMMUTABLE,
    EXACTLY_ONE_DISRUPTION_MODE,
    TOPOLOGY_KEY_IS_LABEL_KEY,
    TEMPLATE_NAME_IS_DNS_LABEL,
    TEMPLATE_NAMES_UNIQUE,
    WORKLOAD_REF_TEMPLATE_IS_DNS_LABEL,
    WORKLOAD_REF_NAME_IS_DNS_SUBDOMAIN,
    WORKLOAD_REF_IMMUTABLE,
    PRIORITY_CLASS_NAME_IS_DNS_SUBDOMAIN,
)


def rule_for(entry: dict[str, str]) -> CelRule:
    """The rule behind an ``x-kubernetes-validations`` entry of a generated schema."""
    for rule in ALL_RULES:
        if rule.expression == entry.get("rule") and rule.message == entry.get("message"):
            return rule
    raise KeyError(f"no Python equivalent for CEL rule {entry.get('rule')!r}")


def cel(*rules: CelRule) -> dict[str, Any]:
    """Schema extra that attaches rules to a model or a field."""
    return {"x-kubernetes-validations": [rule.to_schema() for rule in rules]}
