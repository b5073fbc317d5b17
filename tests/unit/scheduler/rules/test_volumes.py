"""Bound volumes that tie a pod to nodes, as kube-scheduler's VolumeBinding filter
checks bound claims; claims not bound or not seen leave every node open."""

from __future__ import annotations

from muster.scheduler.rules.filters import NODE_CONFLICT, PV_NOT_FOUND
from muster.scheduler.rules.labels import LabelIndex
from muster.scheduler.rules.node_affinity import Requirement, Term
from muster.scheduler.rules.volumes import Volumes

INDEX = LabelIndex(["n1", "n2"], [{"zone": "a"}, {"zone": "b"}])
IN_ZONE_A = (Term((Requirement("zone", "In", ("a",)),), ()),)


def volumes() -> Volumes:
    known = Volumes()
    known.apply_claim("default", "data", "pv-a")
    known.apply_claim("default", "scratch", "pv-anywhere")
    known.apply_claim("default", "waiting", None)
    known.apply_claim("default", "lost", "pv-gone")
    known.apply_volume("pv-a", IN_ZONE_A)
    known.apply_volume("pv-anywhere", None)
    return known


def test_claims_that_tie_no_node_make_no_rule() -> None:
    assert volumes().rule_for("default", ("scratch", "waiting", "never-seen")) is None
    assert volumes().rule_for("other", ("data",)) is None


def test_a_volume_with_node_affinity_refuses_the_nodes_it_cannot_be_used_from() -> None:
    rule = volumes().rule_for("default", ("data", "scratch"))
    assert rule is not None
    refused, reason = rule.refused(INDEX)
    assert (refused.tolist(), reason) == ([False, True], NODE_CONFLICT)


def test_a_claim_bound_to_a_volume_that_does_not_exist_refuses_every_node() -> None:
    rule = volumes().rule_for("default", ("data", "lost"))
    assert rule is not None
    refused, reason = rule.refused(INDEX)
    assert (refused.tolist(), reason) == ([True, True], PV_NOT_FOUND)


def test_deleting_claims_and_volumes_and_copies_kept_apart() -> None:
    known = volumes()
    twin = known.copy()
    known.delete_volume("pv-a")
    assert known.rule_for("default", ("data",)) is not None  # now bound to a missing volume
    known.delete_claim("default", "data")
    assert known.rule_for("default", ("data",)) is None
    rule = twin.rule_for("default", ("data",))
    assert rule is not None and not rule.missing
