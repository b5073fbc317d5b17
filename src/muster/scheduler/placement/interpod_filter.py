"""The nodes a shape's inter-pod rules refuse, read from its counts (`interpod_counts`).

In kube-scheduler's Filter order and with its reasons (`rules.filters`): a spread
constraint's missing key, then its skew (PodTopologySpread), then required affinity,
the shape's own anti-affinity and the placed pods' anti-affinity (InterPodAffinity);
each node refused for the first that fails.
"""

from __future__ import annotations

import numpy as np

from muster.scheduler.placement.fit import BoolArray, Counts, IntArray
from muster.scheduler.placement.interpod_counts import RuleCounts, ShapeRules
from muster.scheduler.rules.filters import inter_pod_reasons
from muster.scheduler.state.predicates import PASSES, StaticFilter

REASONS = inter_pod_reasons()  # each node's failure is an index into these


def _at(counts: Counts, values: IntArray) -> Counts:
    """Each node's domain count (0 for nodes without the key)."""
    found: Counts = np.where(values >= 0, counts[np.maximum(values, 0)], 0)
    return found


def refused_by(
    rules: ShapeRules, counts: RuleCounts, *, lasting_only: bool = False
) -> StaticFilter:
    """The nodes `rules` leave a pod of the shape (`lasting_only`: judged by the rules
    that placing more of the gang never relaxes, anti-affinity)."""
    table = counts.table
    reason_of = np.full(table.size, PASSES, dtype=np.int32)

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
            pinned = spread.on_node + spread.self_match  # see `interplay` on pinned pods
            fail(pinned > constraint.max_skew, 1)
    if rules.affinity and not lasting_only:
        labelled = np.ones(table.size, dtype=np.bool_)
        joined = np.ones(table.size, dtype=np.bool_)
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
        values = counts.values(key)
        fail(np.isin(values, np.fromiter(domains, dtype=np.int32)) & (values >= 0), 4)
    allowed = table.alive & (reason_of == PASSES)
    return StaticFilter(allowed=allowed, reason_of=reason_of, reasons=REASONS)
