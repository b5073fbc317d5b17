"""Devices allocated as kube-scheduler's DynamicResources filter would, pod by pod."""

from __future__ import annotations

import numpy as np

from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import GroupKey, Verdict
from muster.scheduler.placement.devices import (
    CANNOT_ALLOCATE,
    DeviceLedger,
    cycle_ledger,
    devices_per_node,
)
from muster.scheduler.state.device_book import Need
from muster.scheduler.state.device_intake import claim_requests
from muster.scheduler.state.state import ClusterState
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod, pod_group
from tests.unit.scheduler.device_builders import (
    DRIVER,
    claim,
    claim_spec,
    claim_template,
    device_class,
    from_template,
    request,
    resource_slice,
    sharing,
)

NOW = 1_798_761_600.0
H100 = 'device.attributes["gpu.example.com"].product == "H100"'


def need(
    key: str, *requests: Obj, allocated: tuple[tuple[str, str, str], ...] | None = None
) -> Need:
    return Need(key, claim_requests(claim_spec(*requests)), allocated, shared=False)


def ledger_of(*objects: Obj) -> DeviceLedger:
    state = cluster(node("n1"), node("n2"), device_class(), *objects)
    found = cycle_ledger(state, state.node_table().size)
    assert found is not None
    return found


def slots(allowed: np.ndarray) -> list[int]:
    return [int(slot) for slot in np.flatnonzero(allowed)]


def test_nodes_are_allowed_where_enough_free_devices_match() -> None:
    ledger = ledger_of(resource_slice("n1", 2), resource_slice("n2", 4, product="A100"))
    assert slots(ledger.allowed([need("a", request(count=2))])) == [0, 1]
    assert slots(ledger.allowed([need("a", request(count=3))])) == [1]
    assert slots(ledger.allowed([need("a", request(selectors=(H100,)))])) == [0]
    assert slots(ledger.allowed([need("a", request(device_class_name="unknown"))])) == []


def test_two_claims_of_one_pod_add_up_and_a_taken_device_is_gone() -> None:
    ledger = ledger_of(resource_slice("n1", 2), resource_slice("n2", 4))
    both = [need("a", request()), need("b", request(count=2))]
    assert slots(ledger.allowed(both)) == [1]
    assert ledger.take(both, 1)
    assert ledger.taken == {(DRIVER, "n2", f"gpu-{index}") for index in range(3)}
    assert not ledger.take([need("c", request(count=2))], 1)
    assert len(ledger.taken) == 3


def test_devices_allocated_in_status_are_taken_from_the_start() -> None:
    ledger = ledger_of(resource_slice("n1", 2), claim("c", allocated=[("n1", "gpu-0")]))
    assert (DRIVER, "n1", "gpu-0") in ledger.taken
    assert slots(ledger.allowed([need("a", request(count=2))])) == []
    assert slots(ledger.allowed([need("a", request())])) == [0]


def test_a_request_may_take_devices_of_several_kinds() -> None:
    ledger = ledger_of(
        resource_slice("n1", 1, name="h100"),
        resource_slice("n1", 1, product="A100", name="a100", pool="n1-a100"),
    )
    assert ledger.take([need("a", request(count=2))], 0)
    assert len(ledger.taken) == 2


def test_all_devices_need_every_matching_one_free_and_the_pool_complete() -> None:
    ledger = ledger_of(resource_slice("n1", 2), resource_slice("n2", 2, slice_count=2))
    every = [need("a", request(all_devices=True))]
    assert slots(ledger.allowed(every)) == [0]
    assert ledger.take(every, 0)
    assert len(ledger.taken) == 2
    assert slots(ledger.allowed([need("b", request(all_devices=True))])) == []


def test_a_claim_allocated_already_binds_its_pods_to_the_node_of_its_devices() -> None:
    ledger = ledger_of(resource_slice("n1", 2), resource_slice("n2", 2))
    allocated = need("a", request(), allocated=((DRIVER, "n2", "gpu-0"),))
    assert slots(ledger.allowed([allocated])) == [1]
    first = need("shared", request())
    assert ledger.take([first], 0)
    assert slots(ledger.allowed([first])) == [0]
    assert ledger.take([first], 0)
    assert len(ledger.taken) == 1  # allocated once


# ---- through a cycle ---------------------------------------------------------------


def run(*objects: Obj) -> tuple[dict[str, str], Verdict | None]:
    state = cluster(*objects)
    result = schedule(state, now=NOW, config=EngineConfig())
    placements = {
        pod: node for admission in result.admissions for pod, node in admission.placements.items()
    }
    return placements, result.verdicts.get(GroupKey("default", "g"))


GPU_NODES = (node("n1"), node("n2"), node("n3"), device_class())
ONE_H100 = claim_template("one-gpu", request(selectors=(H100,)))


def test_a_gang_lands_only_where_its_claims_can_be_allocated() -> None:
    placements, _ = run(
        *GPU_NODES,
        resource_slice("n1", 2),
        resource_slice("n2", 8, product="A100"),
        resource_slice("n3", 4),
        ONE_H100,
        *gang("g", 6, spec=from_template("one-gpu")),
    )
    assert sorted(placements.values()) == ["n1", "n1", "n3", "n3", "n3", "n3"]


def test_a_gang_whose_devices_are_taken_waits_in_kube_schedulers_words() -> None:
    placements, verdict = run(
        *GPU_NODES,
        resource_slice("n1", 2),
        resource_slice("n3", 2),
        claim("busy", allocated=[("n3", "gpu-0"), ("n3", "gpu-1")]),
        ONE_H100,
        *gang("g", 3, spec=from_template("one-gpu")),
    )
    assert placements == {}
    assert verdict is not None
    assert f"3 {CANNOT_ALLOCATE}" in verdict.message
    assert "at most 2 fit at once" in verdict.message


def test_a_claim_shared_by_a_gang_puts_its_pods_on_the_node_of_its_devices() -> None:
    placements, _ = run(
        *GPU_NODES,
        resource_slice("n2", 2),
        claim("team", request(count=2)),
        *gang("g", 3, spec=sharing("team")),
    )
    assert set(placements.values()) == {"n2"}


def test_a_gang_admitted_before_keeps_the_devices_of_its_plan() -> None:
    planned = {"a-0": "n1", "a-1": "n1"}
    placements, verdict = run(
        *GPU_NODES,
        resource_slice("n1", 2),
        ONE_H100,
        pod_group("a", min_count=2, admitted=True, plan=planned, created="2025-01-01T00:00:00Z"),
        pod("a-0", group="a", spec=from_template("one-gpu")),
        pod("a-1", group="a", spec=from_template("one-gpu")),
        *gang("g", 1, spec=from_template("one-gpu")),
    )
    assert "g-0" not in placements
    assert verdict is not None and CANNOT_ALLOCATE in verdict.message


def test_a_pod_whose_template_is_missing_waits_with_why() -> None:
    placements, verdict = run(
        *GPU_NODES, resource_slice("n1", 2), *gang("g", 1, spec=from_template("nope"))
    )
    assert placements == {}
    assert verdict is not None and "resourceclaimtemplate nope not found" in verdict.message


def test_device_claims_and_extended_resources_mix() -> None:
    placements, _ = run(
        node("n1", gpu="4"),
        node("n2"),
        device_class(),
        resource_slice("n2", 2),
        ONE_H100,
        *gang("g", 2, spec=from_template("one-gpu")),
        *gang("x", 4, gpu="1"),
    )
    assert placements == {"g-0": "n2", "g-1": "n2", **{f"x-{i}": "n1" for i in range(4)}}


def test_a_cluster_without_devices_has_no_ledger() -> None:
    state = ClusterState()
    assert cycle_ledger(state, 0) is None


def test_devices_per_node_count_what_claims_and_planned_pods_hold() -> None:
    state = cluster(
        node("n1"),
        node("n2"),
        node("plain"),
        device_class(),
        ONE_H100,
        resource_slice("n1", 2),
        resource_slice("n2", 2),
        claim("busy", allocated=[("n2", "gpu-0")]),
        pod_group("a", min_count=1, admitted=True, plan={"a-0": "n1"}),
        pod("a-0", group="a", spec=from_template("one-gpu")),
    )
    assert [(item.node, item.free, item.total) for item in devices_per_node(state)] == [
        ("n1", 1, 2),
        ("n2", 1, 2),
    ]
