"""Each CEL rule's Python twin: what it accepts and refuses, values of the wrong type
left to the schema's type check; and every rule found again from its schema entry."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.constants import HIGHEST_USER_PRIORITY, MAX_GANG_SIZE
from muster.api.rules import (
    ALL_RULES,
    EXACTLY_ONE_DISRUPTION_MODE,
    EXACTLY_ONE_POLICY,
    MIN_COUNT_AT_MOST_MAX_GANG_SIZE,
    MIN_COUNT_POSITIVE,
    NAME_IS_A_LABEL_VALUE,
    POD_GROUP_NAMES_ARE_LABEL_VALUES,
    POLICY_KIND_IMMUTABLE,
    PREEMPTION_POLICY_IMMUTABLE,
    PRIORITY_AT_MOST_HIGHEST_USER_PRIORITY,
    PRIORITY_CLASS_NAME_IMMUTABLE,
    PRIORITY_CLASS_NAME_IS_DNS_SUBDOMAIN,
    PRIORITY_IMMUTABLE,
    TEMPLATE_NAME_IS_DNS_LABEL,
    TEMPLATE_NAMES_UNIQUE,
    TOPOLOGY_KEY_IS_LABEL_KEY,
    WORKLOAD_REF_IMMUTABLE,
    WORKLOAD_REF_NAME_IS_DNS_SUBDOMAIN,
    WORKLOAD_REF_TEMPLATE_IS_DNS_LABEL,
    CelRule,
    cel,
    rule_for,
)


def named(name: str, *templates: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"podGroupTemplates": [{"name": template} for template in templates]},
    }


CHECKS = [
    (EXACTLY_ONE_POLICY, {"gang": {}}, True),
    (EXACTLY_ONE_POLICY, {"basic": {}, "gang": {}}, False),
    (EXACTLY_ONE_POLICY, {}, False),
    (EXACTLY_ONE_POLICY, "gang", True),
    (EXACTLY_ONE_DISRUPTION_MODE, {"all": {}}, True),
    (EXACTLY_ONE_DISRUPTION_MODE, {"single": {}, "all": {}}, False),
    (MIN_COUNT_POSITIVE, {"minCount": 1}, True),
    (MIN_COUNT_POSITIVE, {"minCount": 0}, False),
    (MIN_COUNT_POSITIVE, {"minCount": "2"}, True),
    (MIN_COUNT_AT_MOST_MAX_GANG_SIZE, {"minCount": MAX_GANG_SIZE}, True),
    (MIN_COUNT_AT_MOST_MAX_GANG_SIZE, {"minCount": MAX_GANG_SIZE + 1}, False),
    (PRIORITY_AT_MOST_HIGHEST_USER_PRIORITY, {"priority": HIGHEST_USER_PRIORITY}, True),
    (PRIORITY_AT_MOST_HIGHEST_USER_PRIORITY, {"priority": HIGHEST_USER_PRIORITY + 1}, False),
    (
        PRIORITY_AT_MOST_HIGHEST_USER_PRIORITY,
        {"priority": HIGHEST_USER_PRIORITY + 1, "priorityClassName": "system-node-critical"},
        False,
    ),
    (NAME_IS_A_LABEL_VALUE, {"metadata": {"name": "x" * 63}}, True),
    (NAME_IS_A_LABEL_VALUE, {"metadata": {"name": "x" * 64}}, False),
    (POD_GROUP_NAMES_ARE_LABEL_VALUES, named("w" * 55, "workers"), True),
    (POD_GROUP_NAMES_ARE_LABEL_VALUES, named("w" * 56, "workers"), False),
    (POD_GROUP_NAMES_ARE_LABEL_VALUES, named("w" * 64), False),
    (TOPOLOGY_KEY_IS_LABEL_KEY, "topology.kubernetes.io/zone", True),
    (TOPOLOGY_KEY_IS_LABEL_KEY, "a/b/c", False),
    (TOPOLOGY_KEY_IS_LABEL_KEY, 7, True),
    (TEMPLATE_NAME_IS_DNS_LABEL, "workers", True),
    (TEMPLATE_NAME_IS_DNS_LABEL, "Workers", False),
    (TEMPLATE_NAMES_UNIQUE, [{"name": "a"}, {"name": "b"}], True),
    (TEMPLATE_NAMES_UNIQUE, [{"name": "a"}, {"name": "a"}], False),
    (WORKLOAD_REF_TEMPLATE_IS_DNS_LABEL, "a.b", False),
    (WORKLOAD_REF_NAME_IS_DNS_SUBDOMAIN, "a.b", True),
    (PRIORITY_CLASS_NAME_IS_DNS_SUBDOMAIN, "High", False),
]


@pytest.mark.parametrize(("rule", "value", "holds"), CHECKS)
def test_a_rule_checks_its_node(rule: CelRule, value: Any, holds: bool) -> None:
    assert rule.check is not None
    assert rule.check(value) is holds


REF = {"workloadName": "train", "templateName": "workers"}

UPDATES = [
    (POLICY_KIND_IMMUTABLE, {"gang": {"minCount": 3}}, {"gang": {"minCount": 2}}, True),
    (POLICY_KIND_IMMUTABLE, {"basic": {}}, {"gang": {"minCount": 2}}, False),
    (WORKLOAD_REF_IMMUTABLE, {"workloadRef": REF}, {"workloadRef": REF}, True),
    (
        WORKLOAD_REF_IMMUTABLE,
        {"workloadRef": {**REF, "templateName": "x"}},
        {"workloadRef": REF},
        False,
    ),
    (WORKLOAD_REF_IMMUTABLE, {}, {"workloadRef": REF}, False),
    (PRIORITY_IMMUTABLE, {"priority": 10}, {"priority": 10}, True),
    (PRIORITY_IMMUTABLE, {"priority": HIGHEST_USER_PRIORITY}, {"priority": 10}, False),
    (PRIORITY_IMMUTABLE, {"priority": 10}, {}, False),
    (PRIORITY_IMMUTABLE, {}, {}, True),
    (PRIORITY_CLASS_NAME_IMMUTABLE, {"priorityClassName": "system-x"}, {}, False),
    (PRIORITY_CLASS_NAME_IMMUTABLE, {}, {"priorityClassName": "low"}, False),
    (
        PREEMPTION_POLICY_IMMUTABLE,
        {"preemptionPolicy": "Never"},
        {"preemptionPolicy": "Never"},
        True,
    ),
    (
        PREEMPTION_POLICY_IMMUTABLE,
        {"preemptionPolicy": "PreemptLowerPriority"},
        {"preemptionPolicy": "Never"},
        False,
    ),
]


@pytest.mark.parametrize(("rule", "new", "old", "holds"), UPDATES)
def test_a_transition_rule_compares_the_new_value_with_the_old(
    rule: CelRule, new: Any, old: Any, holds: bool
) -> None:
    assert rule.check is None and rule.check_update is not None
    assert rule.check_update(new, old) is holds


def test_every_rule_is_checked_here() -> None:
    checked = {rule for rule, *_ in CHECKS} | {rule for rule, *_ in UPDATES}
    assert checked == set(ALL_RULES)


@pytest.mark.parametrize("rule", ALL_RULES)
def test_a_rule_is_found_again_from_its_schema_entry(rule: CelRule) -> None:
    (entry,) = cel(rule)["x-kubernetes-validations"]
    assert entry["rule"] == rule.expression and entry["message"] == rule.message
    assert entry.get("fieldPath") == rule.field_path
    assert rule_for(entry) is rule


def test_an_entry_with_no_twin_is_an_error() -> None:
    with pytest.raises(KeyError, match="no Python equivalent"):
        rule_for({"rule": "self.x > 1", "message": "x"})
