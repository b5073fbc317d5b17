"""Toleration matching, with TaintToleration's meaning."""

from __future__ import annotations

import pytest

from muster.scheduler.rules.taints import (
    Taint,
    Toleration,
    first_untolerated,
    tolerates_unschedulable,
)

GPU = Taint("gpu", "reserved", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        (Toleration("gpu", "Equal", "reserved", "NoSchedule"), True),
        (Toleration("gpu", "Equal", "reserved", ""), True),
        (Toleration("gpu", "Equal", "other", "NoSchedule"), False),
        (Toleration("gpu", "Exists", "", "NoSchedule"), True),
        (Toleration("gpu", "Exists", "", "NoExecute"), False),
        (Toleration("", "Exists", "", ""), True),
        (Toleration("cpu", "Exists", "", ""), False),
    ],
)
def test_toleration_matches_taint(toleration: Toleration, tolerated: bool) -> None:
    assert toleration.tolerates(GPU) is tolerated


def test_prefer_no_schedule_never_keeps_a_pod_off() -> None:
    assert first_untolerated([Taint("soft", "", "PreferNoSchedule")], ()) is None


def test_the_first_untolerated_filtering_taint_is_reported() -> None:
    taints = [Taint("a", "1", "NoSchedule"), Taint("b", "2", "NoExecute")]
    tolerations = (Toleration("a", "Exists", "", ""),)
    assert first_untolerated(taints, tolerations) == Taint("b", "2", "NoExecute")
    assert Taint("b", "2", "NoExecute").describe() == "node(s) had untolerated taint {b: 2}"


def test_cordoned_nodes_need_the_unschedulable_toleration() -> None:
    assert not tolerates_unschedulable(())
    cordon = Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule")
    assert tolerates_unschedulable((cordon,))
