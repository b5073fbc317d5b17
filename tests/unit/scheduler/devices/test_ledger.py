"""A cycle's devices: counts that tell which nodes can take a pod, and the allocation
on one node, as kube-scheduler's allocator makes it."""

from __future__ import annotations

import numpy as np

from muster.scheduler.devices.book import Need
from muster.scheduler.devices.gang import cycle_ledger
from muster.scheduler.devices.intake import spec_of
from muster.scheduler.devices.ledger import DeviceLedger
from tests.unit.scheduler.builders import Obj, cluster, node
from tests.unit.scheduler.device_builders import (
    DRIVER,
    claim,
    claim_spec,
    claim_template,
    device_class,
    request,
    resource_slice,
)

H100 = 'device.attributes["gpu.example.com"].product == "H100"'


def need(
    key: str, *requests: Obj, allocated: tuple[tuple[str, str, str], ...] | None = None
) -> Need:
    return Need(key, spec_of(claim_spec(*requests)).requests, allocated, shared=False)


def ledger_of(*objects: Obj) -> DeviceLedger:
    """The cycle's devices, with the selectors of the requests below judged (a template
    asks for them, as a claim would)."""
    asking = claim_template("asking", request(), request("h100", selectors=(H100,)))
    state = cluster(node("n1"), node("n2"), device_class(), asking, *objects)
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
    assert ledger.taken_ids() == {(DRIVER, "n2", f"gpu-{index}") for index in range(3)}
    assert not ledger.take([need("c", request(count=2))], 1)
    assert len(ledger.taken_ids()) == 3


def test_devices_allocated_in_status_are_taken_from_the_start() -> None:
    ledger = ledger_of(resource_slice("n1", 2), claim("c", allocated=[("n1", "gpu-0")]))
    assert (DRIVER, "n1", "gpu-0") in ledger.taken_ids()
    assert slots(ledger.allowed([need("a", request(count=2))])) == []
    assert slots(ledger.allowed([need("a", request())])) == [0]


def test_a_request_may_take_devices_of_several_kinds() -> None:
    ledger = ledger_of(
        resource_slice("n1", 1, name="h100"),
        resource_slice("n1", 1, product="A100", name="a100", pool="n1-a100"),
    )
    assert ledger.take([need("a", request(count=2))], 0)
    assert len(ledger.taken_ids()) == 2


def test_all_devices_need_every_matching_one_free_and_the_pool_complete() -> None:
    ledger = ledger_of(resource_slice("n1", 2), resource_slice("n2", 2, slice_count=2))
    every = [need("a", request(all_devices=True))]
    assert slots(ledger.allowed(every)) == [0]
    assert ledger.take(every, 0)
    assert len(ledger.taken_ids()) == 2
    assert slots(ledger.allowed([need("b", request(all_devices=True))])) == []


def test_a_claim_allocated_already_binds_its_pods_to_the_node_of_its_devices() -> None:
    ledger = ledger_of(resource_slice("n1", 2), resource_slice("n2", 2))
    allocated = need("a", request(), allocated=((DRIVER, "n2", "gpu-0"),))
    assert slots(ledger.allowed([allocated])) == [1]
    first = need("shared", request())
    assert ledger.take([first], 0)
    assert slots(ledger.allowed([first])) == [0]
    assert ledger.take([first], 0)
    assert len(ledger.taken_ids()) == 1  # allocated once


def test_a_tainted_device_goes_only_to_a_request_that_tolerates_it() -> None:
    tainted = resource_slice("n1", 2)
    tainted["spec"]["devices"][0]["taints"] = [
        {"key": "health", "value": "bad", "effect": "NoSchedule"}
    ]
    tainted["spec"]["devices"][1]["taints"] = [{"key": "note", "effect": "None"}]
    ledger = ledger_of(tainted)
    assert slots(ledger.allowed([need("a", request())])) == [0]  # the taint of effect None
    assert slots(ledger.allowed([need("a", request(count=2))])) == []
    tolerant = request(count=2)
    tolerant["exactly"]["tolerations"] = [{"key": "health", "operator": "Exists"}]
    assert slots(ledger.allowed([need("a", tolerant)])) == [0]
    assert ledger.take([need("a", tolerant)], 0)
