"""Preemption that frees the devices the victims' claims hold, and only theirs."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import CycleResult
from muster.scheduler.devices.gang import cycle_ledger
from muster.scheduler.devices.preemption import claimed_devices, without
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod, pod_group
from tests.unit.scheduler.device_builders import (
    claim,
    claim_template,
    device_class,
    from_template,
    request,
    resource_slice,
    sharing,
)

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12)
H100 = 'device.attributes["gpu.example.com"].product == "H100"'


def holding(name: str, node_name: str, devices: int, *, priority: int) -> list[Obj]:
    """An admitted one-pod gang on the node, its own claim holding `devices` GPUs."""
    claimed = [(node_name, f"gpu-{index}") for index in range(devices)]
    member = pod(
        f"{name}-0",
        group=name,
        node_name=node_name,
        priority=priority,
        spec={
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        },
    )
    member["status"] = {
        "phase": "Running",
        "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": f"{name}-0-gpu"}],
    }
    return [
        pod_group(
            name, min_count=1, priority=priority, admitted=True, plan={f"{name}-0": node_name}
        ),
        member,
        claim(f"{name}-0-gpu", request(count=devices), allocated=claimed),
    ]


def decided(*objects: Obj) -> CycleResult:
    return schedule(cluster(*objects), now=NOW, config=CONFIG)


BASE = (
    node("n1"),
    node("n2"),
    device_class(),
    claim_template("one-gpu", request(selectors=(H100,))),
)


def test_a_gang_takes_the_devices_of_a_lower_priority_gang() -> None:
    result = decided(
        *BASE,
        resource_slice("n1", 2),
        *holding("low", "n1", 2, priority=1),
        *gang("high", 2, spec=from_template("one-gpu"), priority=10),
    )
    (admission,) = result.admissions
    assert admission.group == GroupKey("default", "high")
    assert set(admission.placements.values()) == {"n1"}
    assert [victim.pod.name for victim in admission.victims] == ["low-0"]


def test_victims_are_taken_where_they_free_the_devices_asked_for() -> None:
    result = decided(
        *BASE,
        resource_slice("n1", 2, product="A100"),
        resource_slice("n2", 2),
        *holding("a100", "n1", 2, priority=1),
        *holding("h100", "n2", 2, priority=2),
        *gang("high", 1, spec=from_template("one-gpu"), priority=10),
    )
    (admission,) = result.admissions
    assert admission.placements == {"high-0": "n2"}
    assert [victim.pod.name for victim in admission.victims] == ["h100-0"]


def test_no_victim_is_taken_when_its_devices_would_not_do() -> None:
    result = decided(
        *BASE,
        resource_slice("n1", 2, product="A100"),
        *holding("a100", "n1", 2, priority=1),
        *gang("high", 1, spec=from_template("one-gpu"), priority=10),
    )
    assert not result.admissions
    assert "cannot allocate all claims" in result.verdicts[GroupKey("default", "high")].message


def test_a_claim_named_in_specs_is_not_counted_as_freed() -> None:
    state = cluster(
        *BASE,
        resource_slice("n1", 2),
        claim("team", request(count=2), allocated=[("n1", "gpu-0"), ("n1", "gpu-1")]),
        pod_group("low", min_count=1, priority=1, admitted=True, plan={"low-0": "n1"}),
        pod("low-0", group="low", node_name="n1", priority=1, spec=sharing("team")),
    )
    ledger = cycle_ledger(state, state.node_table().size)
    assert ledger is not None
    slot = state.pods[next(iter(state.devices.claimants))].slot
    assert claimed_devices(state, ledger)[slot] == 0
    assert without(ledger, state, [slot]).taken.sum() == 2
