"""Messages rendered from explanations."""

from __future__ import annotations

from muster.scheduler.explain import unschedulable_message, waiting_message
from muster.scheduler.results import DomainFit, Explanation, Shortage


def explanation(
    domains: tuple[DomainFit, ...], shortages: tuple[Shortage, ...] = ()
) -> Explanation:
    return Explanation(
        nodes_total=12,
        nodes_feasible=0,
        shortages=shortages,
        needed=4,
        existing=4,
        best_fit=3,
        domains=domains,
        queue_position=1,
    )


def test_the_message_of_the_issue() -> None:
    shortages = (
        Shortage("Insufficient nvidia.com/gpu", 8),
        Shortage("node(s) had untolerated taint {gpu: reserved}", 4),
    )
    domains = (DomainFit("zone=a", 2), DomainFit("zone=b", 3))
    assert unschedulable_message(explanation(domains, shortages), "zone") == (
        "0/12 nodes can host a pod of the gang: 8 Insufficient nvidia.com/gpu, "
        "4 node(s) had untolerated taint {gpu: reserved}; "
        "the gang needs 4 pods, at most 3 fit at once (zone=a: 2, zone=b: 3)"
    )


def test_many_domains_show_the_best_ones() -> None:
    domains = tuple(DomainFit(f"rack=r{index:02d}", index % 4) for index in range(10))
    message = unschedulable_message(explanation(domains), "rack")
    assert message.endswith(
        "(rack=r01: 1, rack=r02: 2, rack=r03: 3, rack=r05: 1, rack=r06: 2, rack=r07: 3, 4 more)"
    )
    assert "rack=r00" not in message


def test_waiting() -> None:
    assert waiting_message(2, 4) == "2/4 member pods exist; waiting for 2 more"
