"""Rules between pods: required pod (anti-)affinity and hard topology spread constraints.

Records and their meaning, as kube-scheduler 1.37 gives it
(`pkg/scheduler/framework/plugins/interpodaffinity`, `.../podtopologyspread`,
`k8s.io/kube-scheduler/framework/types.go`):

- A label selector that is absent (`labelSelector: null`) matches no pod; an empty
  one (`{}`) matches every pod. `matchLabelKeys` / `mismatchLabelKeys` add `key In
  (value)` / `key NotIn (value)` for the pod's own value of each key (the API server
  does the same when it admits the pod; doing it again changes nothing), and a key
  the pod does not carry adds nothing.
- A term looks at pods in its `namespaces`, plus the namespaces its
  `namespaceSelector` selects (`{}`: every namespace); with neither, at pods in the
  pod's own namespace.
- Only `requiredDuringSchedulingIgnoredDuringExecution` terms and
  `whenUnsatisfiable: DoNotSchedule` constraints filter nodes; preferred terms and
  `ScheduleAnyway` constraints only score them, and are not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from muster.scheduler.objects.fields import IntakeError, integer_field, list_field, mapping_field
from muster.scheduler.rules.node_affinity import Requirement

Labels = tuple[tuple[str, str], ...]  # sorted (key, value) pairs
SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class Selector:
    """A pod label selector: every requirement must hold (none: every pod matches)."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        for requirement in self.requirements:
            value = labels.get(requirement.key)
            operator = requirement.operator
            if operator == "In":
                if value is None or value not in requirement.values:
                    return False
            elif operator == "NotIn":
                if value is not None and value in requirement.values:
                    return False
            elif operator == "Exists":
                if value is None:
                    return False
            elif value is not None:  # DoesNotExist
                return False
        return True

    def anchors(self) -> tuple[tuple[str, str], ...] | None:
        """Labels of which a matching pod carries at least one (None: no such set).

        The most selective `In` requirement (fewest values): an index from labels to
        pods then finds the candidates without looking at every pod.
        """
        wanted = [item for item in self.requirements if item.operator == "In"]
        if not wanted:
            return None
        best = min(wanted, key=lambda item: (len(item.values), item.key))
        return tuple((best.key, value) for value in best.values)


@dataclass(frozen=True, slots=True)
class PodTerm:
    """One required pod (anti-)affinity term, its namespaces resolved to a rule."""

    selector: Selector | None  # None: matches no pod
    namespaces: frozenset[str]
    namespace_selector: Selector | None  # None: selects no namespace by labels
    topology_key: str

    def matches(
        self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str]
    ) -> bool:
        """kube-scheduler's `AffinityTerm.Matches`: namespace first, then labels."""
        if self.selector is None:
            return False
        if namespace not in self.namespaces and (
            self.namespace_selector is None or not self.namespace_selector.matches(namespace_labels)
        ):
            return False
        return self.selector.matches(labels)


def matches_all(
    terms: tuple[PodTerm, ...],
    namespace: str,
    labels: Mapping[str, str],
    namespace_labels: Mapping[str, str],
) -> bool:
    """kube-scheduler's `podMatchesAllAffinityTerms`: every term matches (no terms: no)."""
    return bool(terms) and all(term.matches(namespace, labels, namespace_labels) for term in terms)


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One `whenUnsatisfiable: DoNotSchedule` topology spread constraint."""

    max_skew: int
    topology_key: str
    selector: Selector | None  # None: counts no pod
    min_domains: int
    honor_node_affinity: bool  # nodeAffinityPolicy Honor (the default)
    honor_taints: bool  # nodeTaintsPolicy Honor (default Ignore)

    def counts(self, labels: Mapping[str, str]) -> bool:
        """Whether another pod with these labels counts: an empty selector counts none
        (kube-scheduler's `countPodsMatchSelector`), though the pod itself matches it."""
        return (
            self.selector is not None and bool(self.selector.requirements) and self.matches(labels)
        )

    def matches(self, labels: Mapping[str, str]) -> bool:
        return self.selector is not None and self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class InterPodRules:
    """What a pod asks of the pods around it; empty for most pods."""

    affinity: tuple[PodTerm, ...] = ()
    anti_affinity: tuple[PodTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.affinity or self.anti_affinity or self.spread)


NO_RULES = InterPodRules()


def _requirement(raw: object, where: str) -> Requirement:
    requirement = mapping_field(raw, where)
    operator = str(requirement.get("operator", ""))
    if operator not in SELECTOR_OPERATORS:
        raise IntakeError(f"{where}.operator: {operator!r} is not a label selector operator")
    values = list_field(requirement.get("values"), f"{where}.values")
    return Requirement(str(requirement.get("key", "")), operator, tuple(map(str, values)))


def _selector(
    raw: object,
    where: str,
    pod_labels: Mapping[str, str],
    match_keys: list[Any],
    mismatch_keys: list[Any],
) -> Selector | None:
    if raw is None:
        return None
    selector = mapping_field(raw, where)
    requirements = [
        Requirement(str(key), "In", (str(value),))
        for key, value in mapping_field(selector.get("matchLabels"), f"{where}.matchLabels").items()
    ]
    requirements += [
        _requirement(item, f"{where}.matchExpressions[]")
        for item in list_field(selector.get("matchExpressions"), f"{where}.matchExpressions")
    ]
    for keys, operator in ((match_keys, "In"), (mismatch_keys, "NotIn")):
        for key in keys:
            value = pod_labels.get(str(key))
            if value is not None:
                requirements.append(Requirement(str(key), operator, (value,)))
    return Selector(tuple(sorted(set(requirements), key=_requirement_order)))


def label_selector(raw: object, where: str) -> Selector | None:
    """A plain `metav1.LabelSelector` (matchLabels, matchExpressions); None when absent."""
    return _selector(raw, where, {}, [], [])


def _requirement_order(requirement: Requirement) -> tuple[str, str, tuple[str, ...]]:
    return (requirement.key, requirement.operator, requirement.values)


def _term(raw: object, where: str, namespace: str, pod_labels: Mapping[str, str]) -> PodTerm:
    term = mapping_field(raw, where)
    key = term.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise IntakeError(f"{where}.topologyKey is missing")
    names = [str(name) for name in list_field(term.get("namespaces"), f"{where}.namespaces")]
    raw_namespace_selector = term.get("namespaceSelector")
    if not names and raw_namespace_selector is None:
        names = [namespace]
    return PodTerm(
        selector=_selector(
            term.get("labelSelector"),
            f"{where}.labelSelector",
            pod_labels,
            list_field(term.get("matchLabelKeys"), f"{where}.matchLabelKeys"),
            list_field(term.get("mismatchLabelKeys"), f"{where}.mismatchLabelKeys"),
        ),
        namespaces=frozenset(names),
        namespace_selector=_selector(
            raw_namespace_selector, f"{where}.namespaceSelector", {}, [], []
        ),
        topology_key=key,
    )


def _terms(
    affinity: Mapping[str, Any], kind: str, namespace: str, pod_labels: Mapping[str, str]
) -> tuple[PodTerm, ...]:
    where = f"spec.affinity.{kind}"
    section = mapping_field(affinity.get(kind), where)
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    return tuple(
        _term(raw, f"{where}.{required}[{index}]", namespace, pod_labels)
        for index, raw in enumerate(list_field(section.get(required), f"{where}.{required}"))
    )


def _spread(raw: object, index: int, pod_labels: Mapping[str, str]) -> SpreadConstraint | None:
    where = f"spec.topologySpreadConstraints[{index}]"
    constraint = mapping_field(raw, where)
    if constraint.get("whenUnsatisfiable") != "DoNotSchedule":
        return None
    key = constraint.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise IntakeError(f"{where}.topologyKey is missing")
    max_skew = integer_field(constraint.get("maxSkew"), f"{where}.maxSkew")
    if max_skew is None or max_skew < 1:
        raise IntakeError(f"{where}.maxSkew must be at least 1")
    min_domains = integer_field(constraint.get("minDomains"), f"{where}.minDomains")
    return SpreadConstraint(
        max_skew=max_skew,
        topology_key=key,
        selector=_selector(
            constraint.get("labelSelector"),
            f"{where}.labelSelector",
            pod_labels,
            list_field(constraint.get("matchLabelKeys"), f"{where}.matchLabelKeys"),
            [],
        ),
        min_domains=max(min_domains or 1, 1),
        honor_node_affinity=constraint.get("nodeAffinityPolicy") != "Ignore",
        honor_taints=constraint.get("nodeTaintsPolicy") == "Honor",
    )


def inter_pod_rules(
    spec: Mapping[str, Any], namespace: str, pod_labels: Mapping[str, str]
) -> InterPodRules:
    """The pod's required inter-pod rules, as kube-scheduler's filters read them."""
    affinity = mapping_field(spec.get("affinity"), "spec.affinity")
    raw_spread = list_field(spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints")
    if not affinity and not raw_spread:
        return NO_RULES
    spread = (_spread(raw, index, pod_labels) for index, raw in enumerate(raw_spread))
    rules = InterPodRules(
        affinity=_terms(affinity, "podAffinity", namespace, pod_labels),
        anti_affinity=_terms(affinity, "podAntiAffinity", namespace, pod_labels),
        spread=tuple(constraint for constraint in spread if constraint is not None),
    )
    return rules if rules else NO_RULES
