"""Pods that hold a node, indexed for inter-pod rules.

Affinity, anti-affinity and spread ask "how many pods matching this selector sit in
each domain", and existing anti-affinity asks "which placed pods repel this one". Pods
of one Job share their labels, so pods are grouped by (namespace, labels), and groups
are indexed by each label they carry: a selector with an `In` requirement (every
`matchLabels`) looks only at the groups carrying one of its values. Pods with required
anti-affinity are grouped by their terms as well, indexed by the labels their
selectors require, so finding what repels a pod looks only at terms that could match
it. Updated one pod at a time by the cluster state, like its capacity arrays.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from muster.scheduler.rules.pod_terms import Labels, PodTerm
from muster.scheduler.state.intake import PodRecord

GroupId = tuple[str, Labels, bool]
RepellerId = tuple[str, Labels, tuple[PodTerm, ...]]


@dataclass(slots=True)
class LabelGroup:
    """Placed pods of one namespace with the same labels: how many on each node."""

    namespace: str
    labels: Mapping[str, str]
    terminating: bool
    nodes: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Repeller:
    """Placed pods with the same required anti-affinity terms (and labels)."""

    namespace: str
    labels: Mapping[str, str]
    terms: tuple[PodTerm, ...]
    nodes: dict[str, int] = field(default_factory=dict)


def _count(nodes: dict[str, int], node: str, sign: int) -> None:
    count = nodes.get(node, 0) + sign
    if count:
        nodes[node] = count
    else:
        del nodes[node]


class PlacedPods:
    def __init__(self) -> None:
        self.groups: dict[GroupId, LabelGroup] = {}
        self._by_label: dict[tuple[str, str], set[GroupId]] = {}
        self.repellers: dict[RepellerId, Repeller] = {}
        self._repellers_by_anchor: dict[tuple[str, str], set[RepellerId]] = {}
        self._unanchored: set[RepellerId] = set()

    def copy(self) -> PlacedPods:
        """An independent copy: the counts per node are copied, the labels and terms
        (immutable) shared."""
        twin = PlacedPods()
        twin.groups = {
            key: replace(group, nodes=dict(group.nodes)) for key, group in self.groups.items()
        }
        twin._by_label = {label: set(ids) for label, ids in self._by_label.items()}
        twin.repellers = {
            key: replace(repeller, nodes=dict(repeller.nodes))
            for key, repeller in self.repellers.items()
        }
        twin._repellers_by_anchor = {
            anchor: set(ids) for anchor, ids in self._repellers_by_anchor.items()
        }
        twin._unanchored = set(self._unanchored)
        return twin

    def add(self, record: PodRecord, node: str) -> None:
        self._change(record, node, 1)

    def remove(self, record: PodRecord, node: str) -> None:
        self._change(record, node, -1)

    def _change(self, record: PodRecord, node: str, sign: int) -> None:
        namespace = record.key.namespace
        labels = tuple(sorted(record.labels.items()))
        group_id = (namespace, labels, record.terminating)
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = LabelGroup(namespace, record.labels, record.terminating)
            for label in labels:
                self._by_label.setdefault(label, set()).add(group_id)
        _count(group.nodes, node, sign)
        if not group.nodes:
            del self.groups[group_id]
            for label in labels:
                self._forget(self._by_label, label, group_id)
        terms = record.inter_pod.anti_affinity
        if terms:
            self._change_repeller((namespace, labels, terms), record, node, sign)

    def _change_repeller(
        self, repeller_id: RepellerId, record: PodRecord, node: str, sign: int
    ) -> None:
        repeller = self.repellers.get(repeller_id)
        anchors = term_anchors(repeller_id[2])
        if repeller is None:
            repeller = Repeller(repeller_id[0], record.labels, repeller_id[2])
            self.repellers[repeller_id] = repeller
            if anchors is None:
                self._unanchored.add(repeller_id)
            for anchor in anchors or ():
                self._repellers_by_anchor.setdefault(anchor, set()).add(repeller_id)
        _count(repeller.nodes, node, sign)
        if not repeller.nodes:
            del self.repellers[repeller_id]
            self._unanchored.discard(repeller_id)
            for anchor in anchors or ():
                self._forget(self._repellers_by_anchor, anchor, repeller_id)

    @staticmethod
    def _forget(
        index: dict[tuple[str, str], set[Any]], label: tuple[str, str], item: object
    ) -> None:
        members = index.get(label)
        if members is not None:
            members.discard(item)
            if not members:
                del index[label]

    def candidate_groups(self, anchors: tuple[tuple[str, str], ...] | None) -> Iterator[LabelGroup]:
        """Groups that may match a selector with these anchors (every group: None)."""
        if anchors is None:
            yield from self.groups.values()
            return
        seen: set[GroupId] = set()
        for anchor in anchors:
            for group_id in sorted(self._by_label.get(anchor, ())):
                if group_id not in seen:
                    seen.add(group_id)
                    yield self.groups[group_id]

    def candidate_repellers(self, labels: Mapping[str, str]) -> Iterator[Repeller]:
        """Repellers one of whose terms may match a pod with these labels."""
        found = set(self._unanchored)
        for label in labels.items():
            found |= self._repellers_by_anchor.get(label, set())
        for repeller_id in sorted(found, key=_repeller_order):
            yield self.repellers[repeller_id]


def _repeller_order(repeller_id: RepellerId) -> tuple[str, Labels]:
    return (repeller_id[0], repeller_id[1])


def term_anchors(terms: tuple[PodTerm, ...]) -> tuple[tuple[str, str], ...] | None:
    """Labels one of which a pod repelled by any of these terms must carry (None: any pod)."""
    anchors: list[tuple[str, str]] = []
    for term in terms:
        if term.selector is None:
            continue  # matches no pod
        found = term.selector.anchors()
        if found is None:
            return None
        anchors.extend(found)
    return tuple(sorted(set(anchors)))
