"""The gang observer itself: its rule on made-up histories, and on a real partial gang."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.cluster import Kubectl, wait_until
from tests.e2e.harness import GROUP_LABEL, NodePool, install_crds
from tests.e2e.observer import GangLedger, observing

pytestmark = pytest.mark.e2e

GRACE = 2.0


def ledger(min_counts: dict[str, int]) -> GangLedger:
    return GangLedger(min_counts.get, grace=GRACE)


# ---- the rule ---------------------------------------------------------------------------


def test_a_gang_whose_pods_bind_within_the_grace_is_whole() -> None:
    gangs = ledger({"g": 3})
    for pod in ("a", "b", "c"):
        gangs.pod(pod, "g", None, at=0)
    gangs.pod("a", "g", "n1", at=10.0)
    gangs.pod("b", "g", "n2", at=10.5)
    gangs.pod("c", "g", "n3", at=11.9)
    assert gangs.violations(now=100) == []
    assert gangs.spreads == [pytest.approx(1.9)]


def test_a_gang_stuck_below_min_count_is_partial_once_the_grace_is_over() -> None:
    gangs = ledger({"g": 3})
    for pod in ("a", "b", "c"):
        gangs.pod(pod, "g", None, at=0)
    gangs.pod("a", "g", "n1", at=10.0)
    gangs.pod("b", "g", "n1", at=10.2)
    assert gangs.violations(now=11.9) == []
    assert gangs.undecided(now=11.0) == pytest.approx(1.0)
    [partial] = gangs.violations(now=12.1)
    text = partial.describe(GRACE)
    assert "partial gang g: 2 of minCount 3" in text
    assert "a on n1" in text and "b on n1" in text
    assert "members never bound meanwhile: c" in text


def test_a_gang_that_reaches_min_count_too_late_was_partial_meanwhile() -> None:
    gangs = ledger({"g": 2})
    gangs.pod("a", "g", "n1", at=0)
    gangs.pod("b", "g", "n1", at=5)
    [late] = gangs.violations(now=6)
    assert "reached minCount only after 5.00s" in late.describe(GRACE)


def test_a_gang_taken_down_falls_to_zero_through_every_count_without_blame() -> None:
    gangs = ledger({"g": 3})
    for pod in ("a", "b", "c"):
        gangs.pod(pod, "g", "n1", at=0)
    gangs.gone("a", at=50)
    gangs.gone("b", at=60)
    assert gangs.violations(now=100) == []
    # ...and, back at 0, it is judged afresh when it rises again.
    gangs.gone("c", at=70)
    gangs.pod("d", "g", "n2", at=80)
    assert len(gangs.violations(now=90)) == 1


def test_a_release_rolled_back_within_the_grace_is_not_partial_but_a_slow_one_is() -> None:
    gangs = ledger({"quick": 2, "slow": 2})
    gangs.pod("q", "quick", "n1", at=0)
    gangs.gone("q", at=1)
    gangs.pod("s", "slow", "n1", at=0)
    gangs.gone("s", at=30)
    [slow] = gangs.violations(now=100)
    assert "fell back to 0 bound after 30.00s" in slow.describe(GRACE)
    assert gangs.falls == [1]  # the quick one's, for the tests that cause it


def test_pods_that_are_not_a_gang_are_not_judged() -> None:
    gangs = ledger({"one": 1})  # "basic" and "ghost" have no gang minCount
    gangs.pod("a", "basic", "n1", at=0)
    gangs.pod("b", "ghost", "n1", at=0)
    gangs.pod("c", "one", "n1", at=0)
    gangs.pod("d", None, "n1", at=0)
    assert gangs.violations(now=100) == []


def test_a_pod_that_joins_a_gang_by_its_label_counts_from_then() -> None:
    gangs = ledger({"g": 2})
    gangs.pod("a", None, "n1", at=0)
    gangs.pod("b", None, "n1", at=0)
    gangs.pod("a", "g", "n1", at=10)
    gangs.pod("b", "g", "n1", at=11)
    assert gangs.violations(now=100) == []


# ---- on the cluster ---------------------------------------------------------------------


def bound_pod(name: str, pool: NodePool, node: str) -> dict[str, object]:
    """A pod on `node` from the start, with no group label yet.

    Bound at creation (`spec.nodeName`), so neither kube-scheduler nor the operator
    decides anything; it joins its gang later, when the test labels it.
    """
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "tolerations": [pool.toleration],
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }


@pytest.mark.allow_partial_gangs("it makes one, to see the observer catch it")
def test_the_observer_flags_a_gang_bound_one_pod_at_a_time(
    kubeconfig: Path, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    install_crds(kubectl)
    node = pool.add(gpus=1)
    for group in ("partial", "whole"):
        kubectl.apply(
            {
                "apiVersion": "scheduling.muster.dev/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": group},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
            },
            namespace,
        )
    pods = {group: [f"{group}-{i}" for i in range(3)] for group in ("partial", "whole")}
    for name in pods["partial"] + pods["whole"]:
        kubectl.apply(bound_pod(name, pool, node), namespace)

    with observing(kubeconfig, namespace, grace=GRACE) as observer:
        # Three members join at once: whole within the grace.
        kubectl("label", "pod", "-n", namespace, *pods["whole"], f"{GROUP_LABEL}=whole")
        # One member joins, bound, and the other two only later: partial meanwhile.
        first = pods["partial"][0]
        kubectl("label", "pod", "-n", namespace, first, f"{GROUP_LABEL}=partial")
        began = time.monotonic()
        with pytest.raises(AssertionError) as caught:
            wait_until("the observer to flag the partial gang", lambda: False, timeout=30)
        flagged_after = time.monotonic() - began
        kubectl("label", "pod", "-n", namespace, *pods["partial"][1:], f"{GROUP_LABEL}=partial")
        observer.settle()

    message = str(caught.value)
    assert "partial gang partial: 1 of minCount 3" in message, message
    assert f"{first} on {node}" in message
    # The other two were not members yet: the gang had one pod, and it was bound.
    assert "members never bound meanwhile: none" in message
    assert GRACE <= flagged_after < GRACE + 5, flagged_after
    assert [rise.gang for rise in observer.violations()] == ["partial"]
    [rise] = observer.violations()
    assert rise.reached is not None  # it did reach minCount, too late
    assert not observer.errors
