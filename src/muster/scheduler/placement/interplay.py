"""Inter-pod rules for one gang: which nodes each member may use, as members are placed.

kube-scheduler judges each pod against the pods already on the nodes, the pods of its
own gang bound before it included. So a gang's plan is built one pod at a time: after
each pod is placed, the counts the rules read are updated, and the next pod sees them
(`place_once`; falling short, it is placed again other ways: `retries`). The rules,
with kube-scheduler 1.37's semantics and reasons:

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

Placed so, a gang finds a plan whenever one exists for gangs of one shape with one-per-domain
anti-affinity (one pod per node or zone) or with spread (each pod goes where the rule
allows, in best-fit order, which never strands a domain the rule still needs); for a
self-affine gang with nothing to join, the domain of its first pod decides, so each
domain is tried in turn (the roomiest first, at most `DOMAINS_TRIED`).

The counts the rules read, and how a placed member changes them, are
`interpod_counts`; the nodes the counts refuse, `interpod_filter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from muster.scheduler.devices.book import Need
from muster.scheduler.devices.gang import CANNOT_ALLOCATE, GangDevices
from muster.scheduler.devices.ledger import DeviceLedger
from muster.scheduler.placement.fit import (
    BoolArray,
    Matrix,
    NodeOrder,
    Shape,
    best_slot,
    copies_per_node,
    domain_counts,
)
from muster.scheduler.placement.interpod_counts import RuleCounts, Session
from muster.scheduler.placement.interpod_filter import refused_by
from muster.scheduler.placement.interpod_view import InterPodView, Member
from muster.scheduler.placement.shared_claims import Pins
from muster.scheduler.state.predicates import NodeTable, StaticFilter, with_refusals

HOSTNAME = "kubernetes.io/hostname"
DOMAINS_TRIED = 32


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
        self.counts = RuleCounts(self.members, view=view, table=table)
        self._base = [self.counts.rules_of(member) for member in members]

    # ---- filters ---------------------------------------------------------------

    def start_filter(self, index: int) -> StaticFilter:
        """Nodes no pod of the shape may use, whatever else of the gang is placed: those
        refused by anti-affinity (placing more pods only adds to what repels). Spread
        and affinity may open nodes as the gang's own pods land, so they are left out:
        this filter narrows upper bounds, which must stay upper bounds."""
        return refused_by(self._base[index], self.counts, lasting_only=True)

    # ---- placing, one pod at a time ----------------------------------------------

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
                    allowed &= refused_by(session[index], self.counts).allowed
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
                    self.counts.note(session, index, slot)
                    progress = True
        return placed

    def _ledger(self, pins: Pins | None = None) -> DeviceLedger | None:
        """A copy of the cycle's devices for one attempt (`pins`: where shared claims
        go), or None without claims."""
        return None if self.devices is None else self.devices.ledger.copy(pins)

    def _needs(self, pod: str) -> tuple[Need, ...]:
        return () if self.devices is None else self.devices.needs.get(pod, ())

    def open_domains(
        self, free: Matrix, shapes: Sequence[Shape], *, within: BoolArray
    ) -> list[BoolArray]:
        """For a self-affine gang with nothing to join, whose first pod decides its
        domain: the domains to try it in one by one, the roomiest first (at most
        `DOMAINS_TRIED`), each as the nodes of `within` in it; none otherwise."""
        open_key = self._open_affinity_key()
        if open_key is None:
            return []
        values = self.counts.values(open_key)
        room = shapes[0].copies(free, within)
        per_domain = domain_counts(room, values, self.counts.domains(open_key))
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
            self.counts.note(session, shape_of[pod], slot)
            if ledger is not None:
                ledger.take(self._needs(pod), slot)
        for index, shape in enumerate(shapes):
            left = [pod for pod in shape.pods if pod not in placed]
            if left:
                rules_filter = refused_by(session[index], self.counts)
                if ledger is not None:
                    refused = ~ledger.allowed(self._needs(left[0]))
                    rules_filter = with_refusals(rules_filter, refused, CANNOT_ALLOCATE)
                return rules_filter, shape, work, len(placed)
        return None
