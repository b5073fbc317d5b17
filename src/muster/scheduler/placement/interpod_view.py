"""One cycle's view of placed pods for inter-pod rules: the cluster's, then the cycle's own.

Pods holding nodes when the cycle starts come from the state's index (`placed`); pods
placed by gangs admitted earlier in the cycle are added as they are admitted, so the
gangs decided after them see them, as kube-scheduler sees pods it has just assumed.
Counts are cached per question for the cycle and brought up to date with the pods
added since they were computed. The cycle's own pods are indexed like the state's, by
label and by the anchors of their anti-affinity terms: most questions are asked once
(a gang's selectors name the gang), so a question that scanned every pod the cycle had
placed would make a cycle quadratic in the gangs it admits.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from muster.scheduler.rules.pod_terms import InterPodRules, PodTerm
from muster.scheduler.state.intake import PlacementRules, PodRecord
from muster.scheduler.state.placed import PlacedPods, term_anchors

Counts = npt.NDArray[np.int64]
Predicate = Callable[[str, Mapping[str, str]], bool]  # (namespace, labels) -> counts?

NO_LABELS: Mapping[str, str] = {}
Label = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Member:
    """What the rules need to know of a shape's pods (every pod of a shape shares it)."""

    namespace: str
    labels: Mapping[str, str]
    rules: InterPodRules
    node_rules: PlacementRules


@dataclass(slots=True)
class _Cached:
    counts: Counts
    seen: int  # how many of the cycle's own placements are in `counts`


class InterPodView:
    def __init__(
        self,
        placed: PlacedPods,
        *,
        size: int,
        node_slot: Callable[[str], int | None],
        namespace_labels: Mapping[str, Mapping[str, str]],
    ) -> None:
        self._placed = placed
        self.size = size
        self._node_slot = node_slot
        self._namespace_labels = namespace_labels
        self._added: list[tuple[PodRecord, int]] = []
        self._added_by_label: dict[Label, list[int]] = {}  # label -> indexes in _added
        self._repellers_by_anchor: dict[Label, list[int]] = {}
        self._unanchored_repellers: list[int] = []
        self._cache: dict[Hashable, _Cached] = {}

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        return self._namespace_labels.get(namespace, NO_LABELS)

    def add(self, record: PodRecord, slot: int) -> None:
        """A pod placed by this cycle, seen by every question asked after."""
        index = len(self._added)
        self._added.append((record, slot))
        for label in record.labels.items():
            self._added_by_label.setdefault(label, []).append(index)
        terms = record.inter_pod.anti_affinity
        if terms:
            anchors = term_anchors(terms)
            if anchors is None:
                self._unanchored_repellers.append(index)
            for anchor in anchors or ():
                self._repellers_by_anchor.setdefault(anchor, []).append(index)

    @property
    def anyone_repels(self) -> bool:
        """Whether some placed pod has anti-affinity that may match a pod (else no pod is
        repelled; terms whose selectors match nothing are indexed nowhere)."""
        return bool(
            self._placed.repellers or self._unanchored_repellers or self._repellers_by_anchor
        )

    def matching(
        self,
        question: Hashable,
        predicate: Predicate,
        anchors: tuple[tuple[str, str], ...] | None,
        *,
        terminating: bool = True,
    ) -> Counts:
        """Placed pods per node slot for which `predicate` holds (read-only).

        `question` names the predicate for the cache; `anchors` are labels of which a
        matching pod carries one (None: any pod may match); `terminating`: whether
        pods being deleted count (they do for affinity, not for spread).
        """
        cached = self._cache.get(question)
        if cached is None:
            counts = np.zeros(self.size, dtype=np.int64)
            for group in self._placed.candidate_groups(anchors):
                if group.terminating and not terminating:
                    continue
                if predicate(group.namespace, group.labels):
                    for node, number in group.nodes.items():
                        slot = self._node_slot(node)
                        if slot is not None:
                            counts[slot] += number
            for index in self._added_matching(anchors):
                record, slot = self._added[index]
                if predicate(record.key.namespace, record.labels):
                    counts[slot] += 1
            cached = self._cache[question] = _Cached(counts, len(self._added))
        for record, slot in self._added[cached.seen :]:
            if predicate(record.key.namespace, record.labels):
                cached.counts[slot] += 1
        cached.seen = len(self._added)
        return cached.counts

    def _added_matching(self, anchors: tuple[Label, ...] | None) -> list[int]:
        """The cycle's pods carrying one of these labels (all of them: None), in order."""
        if anchors is None:
            return list(range(len(self._added)))
        found: set[int] = set()
        for anchor in anchors:
            found.update(self._added_by_label.get(anchor, ()))
        return sorted(found)

    def repelling(
        self, namespace: str, labels: Mapping[str, str]
    ) -> list[tuple[PodTerm, list[int]]]:
        """Required anti-affinity terms of placed pods that match this pod, with the
        node slots those pods are on (kube-scheduler's existing anti-affinity)."""
        namespace_labels = self.namespace_labels(namespace)
        found: list[tuple[PodTerm, list[int]]] = []
        for repeller in self._placed.candidate_repellers(labels):
            slots = [
                slot
                for slot in (self._node_slot(node) for node in sorted(repeller.nodes))
                if slot is not None
            ]
            for term in repeller.terms:
                if slots and term.matches(namespace, labels, namespace_labels):
                    found.append((term, slots))
        candidates = set(self._unanchored_repellers)
        for label in labels.items():
            candidates.update(self._repellers_by_anchor.get(label, ()))
        for index in sorted(candidates):
            record, slot = self._added[index]
            for term in record.inter_pod.anti_affinity:
                if term.matches(namespace, labels, namespace_labels):
                    found.append((term, [slot]))
        return found
