"""Inter-pod rules for one gang: which nodes each member may use, as members are placed.

kube-scheduler judges each pod against the pods already on the nodes, the pods of its
own gang bound before it included. So a gang's plan is built one pod at a time: after
each pod is placed, the counts the rules read are updated, and the next pod sees them
(`place`). The rules, with kube-scheduler 1.37's semantics and reasons:

- PodTopologySpread (`DoNotSchedule`): a node without the constraint's key is refused;
  pods matching the selector in the pod's namespace are counted per domain over the
  eligible nodes (those carrying every constraint's key and passing the
  nodeAffinityPolicy / nodeTaintsPolicy); a node is refused when its domain's count,
  plus one if the pod matches its own selector, exceeds the smallest count of an
  eligible domain by more than maxSkew. With fewer eligible domains than minDomains
  the smallest count is 0.
- InterPodAffinity: for required affinity, every term's key must be on the node and
  each term's domain must hold a pod matching all terms, unless no such pod exists
  anywhere and the pod matches all its own terms (the first pod of a self-affine
  group); for required anti-affinity, no pod matching a term may be in the node's
  domain of that term; and no placed pod's anti-affinity term may match this pod
  within that pod's domain (symmetry).

Released pods are pinned to their planned node. With nodeAffinityPolicy Honor,
kube-scheduler then counts spread only on that node (the only node the pod's own
node affinity admits): it accepts any placement when minDomains is 1, and otherwise
asks that the node's count plus one stays within maxSkew (one domain is fewer than
minDomains, so the smallest count is 0). A plan is made to satisfy both readings: the
rule as written, and, when minDomains > 1, that per-node bound too.

`place` finds a plan whenever one exists for gangs of one shape with one-per-domain
anti-affinity (one pod per node or zone) or with spread (each pod goes where the rule
allows, in best-fit order, which never strands a domain the rule still needs); for a
self-affine gang with nothing to join, the domain of its first pod decides, so each
domain is tried in turn (the roomiest first, at most `DOMAINS_TRIED`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from muster.scheduler.devices.book import Need
from muster.scheduler.devices.gang import CANNOT_ALLOCATE, GangDevices
from muster.scheduler.devices.ledger import DeviceLedger
from muster.scheduler.placement.fit import (
    BoolArray,
    Counts,
    IntArray,
    Matrix,
    NodeOrder,
    Shape,
    best_slot,
    copies_per_node,
    domain_counts,
)
from muster.scheduler.placement.interpod_reasons import REASONS
from muster.scheduler.placement.interpod_view import InterPodView, Member
from muster.scheduler.placement.retries import retried
from muster.scheduler.placement.shared_claims import Pins
from muster.scheduler.rules.node_affinity import matching_nodes
from muster.scheduler.rules.pod_terms import PodTerm, SpreadConstraint, matches_all
from muster.scheduler.rules.taints import first_untolerated
from muster.scheduler.state.predicates import PASSES, NodeTable, StaticFilter, with_refusals

HOSTNAME = "kubernetes.io/hostname"
DOMAINS_TRIED = 32


def _at(counts: Counts, values: IntArray) -> Counts:
    """Each node's domain count (0 for nodes without the key)."""
    found: Counts = np.where(values >= 0, counts[np.maximum(values, 0)], 0)
    return found


@dataclass(slots=True)
class _Spread:
    constraint: SpreadConstraint
    values: IntArray
    eligible: BoolArray
    eligible_domains: IntArray
    counts: Counts  # per domain id, over eligible nodes
    on_node: Counts  # per node: matching pods on it (what a pinned pod is judged by)
    self_match: int


@dataclass(slots=True)
class _Keyed:
    """Per-domain counts of the pods one term counts (affinity: matching every term)."""

    term: PodTerm
    values: IntArray
    counts: Counts


@dataclass(slots=True)
class _Rules:
    """One shape's rules and the counts they read, as a plan grows."""

    member: Member
    spread: list[_Spread]
    affinity: list[_Keyed]
    self_affine: bool
    anti: list[_Keyed]
    repelled: dict[str, set[int]]  # topology key -> domain ids where a repeller sits

    def copy(self) -> _Rules:
        return _Rules(
            self.member,
            [replace(s, counts=s.counts.copy(), on_node=s.on_node.copy()) for s in self.spread],
            [_Keyed(k.term, k.values, k.counts.copy()) for k in self.affinity],
            self.self_affine,
            [_Keyed(k.term, k.values, k.counts.copy()) for k in self.anti],
            {key: set(domains) for key, domains in self.repelled.items()},
        )


@dataclass(slots=True)
class _Effects:
    """What placing a pod of one shape changes for another shape's rules."""

    affinity: bool  # it matches every affinity term
    anti: list[int]  # anti-affinity terms it matches
    repels: list[PodTerm]  # its own anti-affinity terms that match the other shape
    spread: list[int]  # spread constraints that count it


Session = list[_Rules]  # each shape's rules and counts, as a plan grows


class GangInterplay:
    """The rules of a gang's shapes, against one cycle's view of placed pods."""

    def __init__(
        self,
        members: Sequence[Member],
        *,
        view: InterPodView,
        table: NodeTable,
        devices: GangDevices | None = None,
    ) -> None:
        self.members = list(members)
        self.view = view
        self.table = table
        self.devices = devices  # the pods' device claims, allocated as the pods are placed
        self.dynamic = any(member.rules for member in members) or devices is not None
        self.unsure = False  # a bounded search fell short: a placement may still exist
        self._base = [self._rules_of(member) for member in members]
        self._effects: dict[tuple[int, int], _Effects] = {}

    # ---- counts at the start ---------------------------------------------------

    def _values(self, key: str) -> IntArray:
        return self.table.labels.values_of(key)

    def _domains(self, key: str) -> int:
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
            eligible &= self._values(key) >= 0
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

    def _spread_of(self, member: Member, constraint: SpreadConstraint) -> _Spread:
        values = self._values(constraint.topology_key)
        eligible = self._eligible(member, constraint)
        selector = constraint.selector

        def predicate(namespace: str, pod_labels: Mapping[str, str]) -> bool:
            return namespace == member.namespace and constraint.counts(pod_labels)

        anchors = selector.anchors() if selector is not None else ()
        per_node = self.view.matching(
            ("spread", member.namespace, selector), predicate, anchors, terminating=False
        )
        counted = np.where(eligible, per_node, 0)
        return _Spread(
            constraint,
            values,
            eligible,
            np.unique(values[eligible & (values >= 0)]).astype(np.int32),
            domain_counts(counted, values, self._domains(constraint.topology_key)),
            per_node.copy(),
            int(constraint.matches(member.labels)),
        )

    def _keyed(self, term: PodTerm, per_node: Counts) -> _Keyed:
        values = self._values(term.topology_key)
        domains = self._domains(term.topology_key)
        return _Keyed(term, values, domain_counts(per_node, values, domains))

    def _rules_of(self, member: Member) -> _Rules:
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
                values = self._values(term.topology_key)
                domains = {int(values[slot]) for slot in slots if values[slot] >= 0}
                if domains:
                    repelled.setdefault(term.topology_key, set()).update(domains)
        return _Rules(
            member=member,
            spread=[self._spread_of(member, constraint) for constraint in rules.spread],
            affinity=affinity,
            self_affine=matches_all(
                rules.affinity, member.namespace, member.labels, namespace_labels
            ),
            anti=anti,
            repelled=repelled,
        )

    # ---- filters ---------------------------------------------------------------

    def start_filter(self, index: int) -> StaticFilter:
        """Nodes no pod of the shape may use, whatever else of the gang is placed: those
        refused by anti-affinity (placing more pods only adds to what repels). Spread
        and affinity may open nodes as the gang's own pods land, so they are left out:
        this filter narrows upper bounds, which must stay upper bounds."""
        return self._filter(self._base[index], lasting_only=True)

    def _filter(self, rules: _Rules, *, lasting_only: bool = False) -> StaticFilter:
        reason_of = np.full(self.table.size, PASSES, dtype=np.int32)

        def fail(nodes: BoolArray, reason: int) -> None:
            reason_of[nodes & (reason_of == PASSES)] = reason

        for spread in [] if lasting_only else rules.spread:
            fail(spread.values < 0, 0)
            constraint = spread.constraint
            if spread.eligible_domains.size < constraint.min_domains:
                smallest = 0
            else:
                smallest = int(spread.counts[spread.eligible_domains].min())
            skew = _at(spread.counts, spread.values) + spread.self_match - smallest
            fail(skew > constraint.max_skew, 1)
            if constraint.min_domains > 1 and constraint.honor_node_affinity:
                pinned = spread.on_node + spread.self_match  # see the note on pinned pods
                fail(pinned > constraint.max_skew, 1)
        if rules.affinity and not lasting_only:
            labelled = np.ones(self.table.size, dtype=np.bool_)
            joined = np.ones(self.table.size, dtype=np.bool_)
            anywhere = False
            for keyed in rules.affinity:
                labelled &= keyed.values >= 0
                joined &= _at(keyed.counts, keyed.values) > 0
                anywhere = anywhere or bool(keyed.counts.any())
            if not anywhere and rules.self_affine:
                joined[:] = True
            fail(~(labelled & joined), 2)
        for keyed in rules.anti:
            fail(_at(keyed.counts, keyed.values) > 0, 3)
        for key, domains in rules.repelled.items():
            values = self._values(key)
            fail(np.isin(values, np.fromiter(domains, dtype=np.int32)) & (values >= 0), 4)
        allowed = self.table.alive & (reason_of == PASSES)
        return StaticFilter(allowed=allowed, reason_of=reason_of, reasons=REASONS)

    # ---- placing, one pod at a time ----------------------------------------------

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

    def _note(self, session: list[_Rules], placed: int, slot: int) -> None:
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
                domain = int(self._values(term.topology_key)[slot])
                if domain >= 0:
                    rules.repelled.setdefault(term.topology_key, set()).add(domain)
            for index in effects.spread:
                spread = rules.spread[index]
                spread.on_node[slot] += 1
                if spread.eligible[slot] and spread.values[slot] >= 0:
                    spread.counts[spread.values[slot]] += 1

    def session(self) -> Session:
        """The rules' counts before any member is placed, to carry across `place_in`."""
        return [rules.copy() for rules in self._base]

    def place_in(
        self,
        free: Matrix,
        shapes: Sequence[Shape],
        *,
        within: BoolArray,
        order: NodeOrder,
        session: Session,
    ) -> tuple[dict[str, int], Session]:
        """As many pods of `shapes` (the gang's shapes, in their order, some with fewer
        pods) as fit, judged with the members `session` has seen placed (a slice after
        the slices before it); and the session with these added, a copy."""
        carried = [rules.copy() for rules in session]
        limit = sum(len(shape.pods) for shape in shapes)
        return self.place_once(free, shapes, within, order, limit, session=carried), carried

    def place_once(
        self,
        free: Matrix,
        shapes: Sequence[Shape],
        within: BoolArray,
        order: NodeOrder,
        limit: int,
        *,
        session: Session | None = None,
        pins: Pins | None = None,
    ) -> dict[str, int]:
        work = free.copy()
        session = self.session() if session is None else session
        remaining = [list(shape.pods) for shape in shapes]
        used = [np.zeros(self.table.size, dtype=np.bool_) for _ in shapes]
        ledger = self._ledger(pins)
        stranded = None if ledger is None else ledger.free_per_slot()  # best fit's, below
        order = replace(order, stranded=stranded)
        refused = [np.zeros(self.table.size, dtype=np.bool_) for _ in shapes]  # claims
        placed: dict[str, int] = {}
        progress = True
        while progress and len(placed) < limit:
            progress = False
            for index, shape in enumerate(shapes):
                while remaining[index] and len(placed) < limit:
                    allowed = within & shape.rules_filter.allowed
                    allowed &= self._filter(session[index]).allowed
                    if shape.one_per_node:
                        allowed &= ~used[index]
                    if ledger is not None:
                        allowed &= (
                            ledger.allowed(self._needs(remaining[index][0])) & ~refused[index]
                        )
                    copies = copies_per_node(work, shape.demand, allowed)
                    if not copies.any():
                        break
                    slot = best_slot(work, shape.demand, copies, order)
                    if ledger is not None:
                        if not ledger.take(self._needs(remaining[index][0]), slot):
                            refused[index][slot] = True  # its claims do not fit there
                            continue
                        if stranded is not None:
                            stranded[slot] = ledger.free_on(slot)
                    work[slot] -= shape.demand
                    used[index][slot] = True
                    placed[remaining[index].pop(0)] = slot
                    self._note(session, index, slot)
                    progress = True
        return placed

    def _ledger(self, pins: Pins | None = None) -> DeviceLedger | None:
        """A copy of the cycle's devices for one attempt (`pins`: where shared claims
        go), or None without claims."""
        return None if self.devices is None else self.devices.ledger.copy(pins)

    def _needs(self, pod: str) -> tuple[Need, ...]:
        return () if self.devices is None else self.devices.needs.get(pod, ())

    def place(
        self,
        free: Matrix,
        shapes: Sequence[Shape],
        *,
        within: BoolArray,
        order: NodeOrder,
        needed: int,
        limit: int | None = None,
    ) -> dict[str, int]:
        """Pod name -> node slot for as many members as fit (up to `limit`), placed one by
        one under the rules; may hold fewer than `needed`. `shapes` are the members'
        shapes, in the order the members were given. Falling short, it tries again in
        each open domain, then with each node for the claims the pods share
        (`retries`)."""
        cap = limit if limit is not None else sum(len(shape.pods) for shape in shapes)
        best = self.place_once(free, shapes, within, order, cap)
        if len(best) >= needed:
            return best
        return retried(
            self, best, free, shapes, within=within, order=order, needed=needed, limit=cap
        )

    def open_domains(
        self, free: Matrix, shapes: Sequence[Shape], *, within: BoolArray
    ) -> list[BoolArray]:
        """For a self-affine gang with nothing to join, whose first pod decides its
        domain: the domains to try it in one by one, the roomiest first (at most
        `DOMAINS_TRIED`), each as the nodes of `within` in it; none otherwise."""
        open_key = self._open_affinity_key()
        if open_key is None:
            return []
        values = self._values(open_key)
        room = shapes[0].copies(free, within)
        per_domain = domain_counts(room, values, self._domains(open_key))
        ranked = sorted(
            (int(domain) for domain in np.flatnonzero(per_domain)),
            key=lambda domain: (-int(per_domain[domain]), domain),
        )
        return [within & (values == domain) for domain in ranked[:DOMAINS_TRIED]]

    def _open_affinity_key(self) -> str | None:
        """The key of a self-affine shape with no pod to join yet: its first pod decides."""
        for rules in self._base:
            if rules.self_affine and not any(keyed.counts.any() for keyed in rules.affinity):
                return rules.affinity[0].term.topology_key
        return None

    def refusal_filter(
        self, free: Matrix, shapes: Sequence[Shape], *, within: BoolArray, order: NodeOrder
    ) -> tuple[StaticFilter, Shape, Matrix, int] | None:
        """Why the first pod left out of the best partial plan fits nowhere, node by node,
        as kube-scheduler would tell it once the others are bound; what is free then, and
        how many are placed. None when the rules leave out no pod."""
        total = sum(len(shape.pods) for shape in shapes)
        placed = self.place_once(free, shapes, within, order, total)
        session = [rules.copy() for rules in self._base]
        work = free.copy()
        shape_of = {pod: index for index, shape in enumerate(shapes) for pod in shape.pods}
        ledger = self._ledger()
        for pod, slot in placed.items():
            work[slot] -= shapes[shape_of[pod]].demand
            self._note(session, shape_of[pod], slot)
            if ledger is not None:
                ledger.take(self._needs(pod), slot)
        for index, shape in enumerate(shapes):
            left = [pod for pod in shape.pods if pod not in placed]
            if left:
                rules_filter = self._filter(session[index])
                if ledger is not None:
                    refused = ~ledger.allowed(self._needs(left[0]))
                    rules_filter = with_refusals(rules_filter, refused, CANNOT_ALLOCATE)
                return rules_filter, shape, work, len(placed)
        return None
