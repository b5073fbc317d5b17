"""The counts inter-pod rules read, taken from the cycle's view and kept as a plan grows.

For each shape of a gang: per domain of each spread constraint, the pods its selector
counts over the eligible nodes (kube-scheduler's PodTopologySpread PreFilter state);
per domain of each required affinity and anti-affinity term, the placed pods the term
matches; and the domains where a placed pod's own anti-affinity repels the shape
(InterPodAffinity's PreFilter state, symmetry included). `note` adds a member placed
on a node to every shape's counts, as kube-scheduler sees a pod of the gang once it is
bound; how the counts refuse nodes is `interpod_filter`'s job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from muster.scheduler.placement.fit import BoolArray, Counts, IntArray, domain_counts
from muster.scheduler.placement.interpod_view import InterPodView, Member
from muster.scheduler.rules.node_affinity import matching_nodes
from muster.scheduler.rules.pod_terms import PodTerm, SpreadConstraint, matches_all
from muster.scheduler.rules.taints import first_untolerated
from muster.scheduler.state.predicates import NodeTable


@dataclass(slots=True)
class SpreadCount:
    constraint: SpreadConstraint
    values: IntArray
    eligible: BoolArray
    eligible_domains: IntArray
    counts: Counts  # per domain id, over eligible nodes
    on_node: Counts  # per node: matching pods on it (what a pinned pod is judged by)
    self_match: int


@dataclass(slots=True)
class TermCount:
    """Per-domain counts of the pods one term counts (affinity: matching every term)."""

    term: PodTerm
    values: IntArray
    counts: Counts


@dataclass(slots=True)
class ShapeRules:
    """One shape's rules and the counts they read, as a plan grows."""

    member: Member
    spread: list[SpreadCount]
    affinity: list[TermCount]
    self_affine: bool
    anti: list[TermCount]
    repelled: dict[str, set[int]]  # topology key -> domain ids where a repeller sits

    def copy(self) -> ShapeRules:
        return ShapeRules(
            self.member,
            [replace(s, counts=s.counts.copy(), on_node=s.on_node.copy()) for s in self.spread],
            [TermCount(k.term, k.values, k.counts.copy()) for k in self.affinity],
            self.self_affine,
            [TermCount(k.term, k.values, k.counts.copy()) for k in self.anti],
            {key: set(domains) for key, domains in self.repelled.items()},
        )


@dataclass(slots=True)
class _Effects:
    """What placing a pod of one shape changes for another shape's rules."""

    affinity: bool  # it matches every affinity term
    anti: list[int]  # anti-affinity terms it matches
    repels: list[PodTerm]  # its own anti-affinity terms that match the other shape
    spread: list[int]  # spread constraints that count it


Session = list[ShapeRules]  # each shape's rules and counts, as a plan grows


class RuleCounts:
    """Counts the rules of a gang's shapes (`members`, by shape index) read, against one
    cycle's view of placed pods."""

    def __init__(self, members: list[Member], *, view: InterPodView, table: NodeTable) -> None:
        self.members = members
        self.view = view
        self.table = table
        self._effects: dict[tuple[int, int], _Effects] = {}

    # ---- counts at the start ---------------------------------------------------

    def values(self, key: str) -> IntArray:
        return self.table.labels.values_of(key)

    def domains(self, key: str) -> int:
        return max(len(self.table.labels.vocabulary(key)), 1)

    def _matching_all(self, terms: tuple[PodTerm, ...]) -> Counts:
        """Placed pods per node slot that match every one of the terms."""
        labels = self.view.namespace_labels

        def predicate(namespace: str, pod_labels: Mapping[str, str]) -> bool:
            return matches_all(terms, namespace, pod_labels, labels(namespace))

        first = terms[0].selector
        anchors = first.anchors() if first is not None else ()
        return self.view.matching(("all", terms), predicate, anchors)

    def _eligible(self, member: Member, constraint: SpreadConstraint) -> BoolArray:
        keys = {item.topology_key for item in member.rules.spread}
        eligible = self.table.alive.copy()
        for key in keys:
            eligible &= self.values(key) >= 0
        if constraint.honor_node_affinity:
            rules = member.node_rules
            if rules.node_selector or rules.required_terms is not None:
                eligible &= matching_nodes(
                    rules.node_selector, rules.required_terms, self.table.labels
                )
        if constraint.honor_taints:
            for set_id, taints in self.table.taint_sets.items():
                if first_untolerated(taints, member.node_rules.tolerations) is not None:
                    eligible &= self.table.taint_set_of != set_id
        return eligible

    def _spread_of(self, member: Member, constraint: SpreadConstraint) -> SpreadCount:
        values = self.values(constraint.topology_key)
        eligible = self._eligible(member, constraint)
        selector = constraint.selector

        def predicate(namespace: str, pod_labels: Mapping[str, str]) -> bool:
            return namespace == member.namespace and constraint.counts(pod_labels)

        anchors = selector.anchors() if selector is not None else ()
        per_node = self.view.matching(
            ("spread", member.namespace, selector), predicate, anchors, terminating=False
        )
        counted = np.where(eligible, per_node, 0)
        return SpreadCount(
            constraint,
            values,
            eligible,
            np.unique(values[eligible & (values >= 0)]).astype(np.int32),
            domain_counts(counted, values, self.domains(constraint.topology_key)),
            per_node.copy(),
            int(constraint.matches(member.labels)),
        )

    def _keyed(self, term: PodTerm, per_node: Counts) -> TermCount:
        values = self.values(term.topology_key)
        domains = self.domains(term.topology_key)
        return TermCount(term, values, domain_counts(per_node, values, domains))

    def rules_of(self, member: Member) -> ShapeRules:
        """The member's rules, counted over the pods placed before the gang."""
        rules = member.rules
        namespace_labels = self.view.namespace_labels(member.namespace)
        affinity = []
        if rules.affinity:
            matching = self._matching_all(rules.affinity)
            affinity = [self._keyed(term, matching) for term in rules.affinity]
        anti = [self._keyed(term, self._matching_all((term,))) for term in rules.anti_affinity]
        repelled: dict[str, set[int]] = {}
        if self.view.anyone_repels:
            for term, slots in self.view.repelling(member.namespace, member.labels):
                values = self.values(term.topology_key)
                domains = {int(values[slot]) for slot in slots if values[slot] >= 0}
                if domains:
                    repelled.setdefault(term.topology_key, set()).update(domains)
        return ShapeRules(
            member=member,
            spread=[self._spread_of(member, constraint) for constraint in rules.spread],
            affinity=affinity,
            self_affine=matches_all(
                rules.affinity, member.namespace, member.labels, namespace_labels
            ),
            anti=anti,
            repelled=repelled,
        )

    # ---- counts as members are placed --------------------------------------------

    def _effects_of(self, placed: int, other: int) -> _Effects:
        found = self._effects.get((placed, other))
        if found is None:
            member, target = self.members[placed], self.members[other]
            labels = self.view.namespace_labels
            namespace, pod_labels = member.namespace, member.labels
            found = _Effects(
                affinity=matches_all(
                    target.rules.affinity, namespace, pod_labels, labels(namespace)
                ),
                anti=[
                    index
                    for index, term in enumerate(target.rules.anti_affinity)
                    if term.matches(namespace, pod_labels, labels(namespace))
                ],
                repels=[
                    term
                    for term in member.rules.anti_affinity
                    if term.matches(target.namespace, target.labels, labels(target.namespace))
                ],
                spread=[
                    index
                    for index, constraint in enumerate(target.rules.spread)
                    if namespace == target.namespace and constraint.counts(pod_labels)
                ],
            )
            self._effects[(placed, other)] = found
        return found

    def note(self, session: Session, placed: int, slot: int) -> None:
        """A member of shape `placed` on `slot`, added to every shape's counts."""
        for other, rules in enumerate(session):
            effects = self._effects_of(placed, other)
            if effects.affinity:
                for keyed in rules.affinity:
                    if keyed.values[slot] >= 0:
                        keyed.counts[keyed.values[slot]] += 1
            for index in effects.anti:
                keyed = rules.anti[index]
                if keyed.values[slot] >= 0:
                    keyed.counts[keyed.values[slot]] += 1
            for term in effects.repels:
                domain = int(self.values(term.topology_key)[slot])
                if domain >= 0:
                    rules.repelled.setdefault(term.topology_key, set()).add(domain)
            for index in effects.spread:
                spread = rules.spread[index]
                spread.on_node[slot] += 1
                if spread.eligible[slot] and spread.values[slot] >= 0:
                    spread.counts[spread.values[slot]] += 1
