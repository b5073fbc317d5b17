"""Devices allocated as kube-scheduler's DynamicResources filter would, pod by pod."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import Verdict
from muster.scheduler.devices.gang import (
    CANNOT_ALLOCATE,
    cycle_ledger,
    devices_per_node,
)
from muster.scheduler.state.state import ClusterState
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
H100 = 'device.attributes["gpu.example.com"].product == "H100"'


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


def test_what_a_cycle_keeps_of_the_devices_follows_the_claims_and_the_slices() -> None:
    state = cluster(node("n1"), device_class(), resource_slice("n1", 2))
    size = state.node_table().size
    first = cycle_ledger(state, size)
    assert first is not None and not first.taken.any()
    state.apply("ResourceClaim", claim("c", allocated=[("n1", "gpu-1")]))
    second = cycle_ledger(state, size)
    assert second is not None and second.taken_ids() == {("gpu.example.com", "n1", "gpu-1")}
    state.delete("ResourceClaim", "default", "c")
    state.apply("ResourceClaim", claim("d", allocated=[("n1", "gpu-0")]))
    moved = cycle_ledger(state, size)
    assert moved is not None and moved.taken_ids() == {("gpu.example.com", "n1", "gpu-0")}
    state.apply("ResourceSlice", resource_slice("n1", 4))
    third = cycle_ledger(state, size)
    assert third is not None and int(third.where.total[0]) == 4
    assert third.taken_ids() == {("gpu.example.com", "n1", "gpu-0")}
    assert not first.taken.any()  # a cycle's ledger is its own


def test_a_claim_whose_devices_must_share_a_numa_node_goes_where_two_do() -> None:
    split = resource_slice("n1", 2)
    together = resource_slice("n2", 4)
    for numbered, numa in ((split, [0, 1]), (together, [0, 1, 1, 0])):
        for device, value in zip(numbered["spec"]["devices"], numa, strict=False):
            device["attributes"]["numa"] = {"int": value}
    template = claim_template("pair", request(count=2))
    template["spec"]["spec"]["devices"]["constraints"] = [
        {"matchAttribute": "gpu.example.com/numa"}
    ]
    placements, verdict = run(
        node("n1"),
        node("n2"),
        device_class(),
        split,
        together,
        template,
        *gang("g", 2, spec=from_template("pair")),
    )
    assert placements == {"g-0": "n2", "g-1": "n2"}
    assert verdict is None


def test_a_first_available_list_takes_a_later_choice_where_the_first_has_no_room() -> None:
    template = claim_template("either")
    template["spec"]["spec"]["devices"]["requests"] = [
        {
            "name": "gpu",
            "firstAvailable": [
                {
                    "name": "two-h100",
                    "deviceClassName": "gpu.example.com",
                    "count": 2,
                    "selectors": [{"cel": {"expression": H100}}],
                },
                {"name": "one-any", "deviceClassName": "gpu.example.com", "count": 1},
            ],
        }
    ]
    placements, _ = run(
        node("n1"),
        node("n2"),
        device_class(),
        template,
        resource_slice("n1", 1),
        resource_slice("n2", 1, product="A100"),
        *gang("g", 2, spec=from_template("either")),
    )
    assert sorted(placements.values()) == ["n1", "n2"]


def test_a_gang_kept_in_one_zone_goes_to_the_zone_whose_nodes_have_its_devices() -> None:
    zone = "topology.kubernetes.io/zone"
    placements, _ = run(
        node("a1", labels={zone: "a"}),
        node("a2", labels={zone: "a"}),
        node("b1", labels={zone: "b"}),
        device_class(),
        ONE_H100,
        resource_slice("a1", 1),
        resource_slice("a2", 1, product="A100"),
        resource_slice("b1", 2),
        *gang("g", 2, spec=from_template("one-gpu"), topology_key=zone),
    )
    assert placements == {"g-0": "b1", "g-1": "b1"}


def test_a_shared_claim_is_tried_on_every_node_that_could_hold_it() -> None:
    """The fullest node (n1, room for two) is tried first; the claim tied to it would
    strand the third member: the search moves the claim to n3, which holds all three."""
    placements, verdict = run(
        node("n1", cpu="2"),
        node("n2", cpu="1"),
        node("n3", cpu="3"),
        device_class(),
        resource_slice("n1", 2),
        resource_slice("n2", 2),
        resource_slice("n3", 2),
        claim("team", request(count=2)),
        *gang("g", 3, spec=sharing("team")),
    )
    assert verdict is None
    assert placements == {"g-0": "n3", "g-1": "n3", "g-2": "n3"}
