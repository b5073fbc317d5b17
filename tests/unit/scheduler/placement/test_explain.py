"""Messages rendered from explanations."""

from __future__ import annotations

from dataclasses import replace

from muster.scheduler.decisions.results import (
    DomainFit,
    Explanation,
    Shortage,
    Shortfall,
    SliceFit,
)
from muster.scheduler.placement.explain import format_amount, unschedulable_message, waiting_message


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
        shortfalls=(Shortfall("nvidia.com/gpu", 8, 6),),
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
        "the gang needs 4 pods, at most 3 fit at once (zone=a: 2, zone=b: 3); "
        "short in total in any one zone domain: nvidia.com/gpu (needs 8, 6 free)"
    )


def test_many_domains_show_the_best_ones() -> None:
    domains = tuple(DomainFit(f"rack=r{index:02d}", index % 4) for index in range(10))
    message = unschedulable_message(explanation(domains), "rack")
    assert (
        "(rack=r01: 1, rack=r02: 2, rack=r03: 3, rack=r05: 1, rack=r06: 2, rack=r07: 3, 4 more)"
        in message
    )
    assert "rack=r00" not in message


def test_fragmentation_is_named_when_nothing_is_short_in_total() -> None:
    fragmented = replace(explanation(()), shortfalls=())
    assert unschedulable_message(fragmented, None).endswith(
        "; enough is free in total, but split across nodes in too small pieces"
    )
    assert "enough is free" not in unschedulable_message(fragmented, None, spread_limited=True)


def test_waiting() -> None:
    assert waiting_message(2, 4) == "2/4 member pods exist; waiting for 2 more"


def test_amounts_are_shown_in_the_units_users_write() -> None:
    assert format_amount("cpu", 2500) == "2.5"
    assert format_amount("memory", 3 * 2**30) == "3Gi"
    assert format_amount("memory", 1536 * 2**20) == "1.5Gi"
    assert format_amount("memory", 100) == "100"
    assert format_amount("nvidia.com/gpu", 7) == "7"


def test_shortfalls_are_named_with_the_domain_kind() -> None:
    short = replace(
        explanation((DomainFit("zone=a", 2),)),
        shortfalls=(Shortfall("memory", 2**31, 2**30),),
    )
    assert unschedulable_message(short, "zone").endswith(
        "; short in total in any one zone domain: memory (needs 2Gi, 1Gi free)"
    )


def test_a_sliced_gang_is_told_its_slices_and_the_rack_closest_to_one() -> None:
    domains = (DomainFit("zone=a", 2), DomainFit("zone=b", 3))
    most = DomainFit("rack=r4", 3)
    sliced = replace(explanation(domains), slices=SliceFit("rack", 4, most), shortfalls=())
    message = unschedulable_message(sliced, "zone")
    assert (
        "the gang needs 4 pods in slices of 4, each in one rack domain, at most 3 fit at once "
        "(zone=a: 2, zone=b: 3); no rack domain has room for a slice of 4: r4 takes 3"
    ) in message
    roomy = replace(sliced, slices=SliceFit("rack", 4))
    assert "room for a slice" not in unschedulable_message(roomy, "zone")
