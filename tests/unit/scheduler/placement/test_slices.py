"""Slices: members cut by completion index or name, each slice whole in one domain."""

from __future__ import annotations

import numpy as np
import pytest

from muster.api.constants import COMPLETION_INDEX_KEY
from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import CycleResult
from muster.scheduler.placement.slicing import SliceMember, slice_ids, slicing_of
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod, pod_group

NOW = 1_798_761_600.0
ZONE, BLOCK, RACK = "zone", "block", "rack"
HOSTNAME = "kubernetes.io/hostname"
LEVELS = (ZONE, BLOCK, RACK)
CONFIG = EngineConfig(starvation_seconds=10**12, topology_levels=LEVELS)
KEY = GroupKey("default", "g")


def layout() -> dict[str, tuple[str, str, str]]:
    """Two zones of two blocks of two racks of two nodes: n-a1r1-0 is in zone a,
    block a1, rack a1r1."""
    found = {}
    for zone in "ab":
        for block in (f"{zone}1", f"{zone}2"):
            for rack in (f"{block}r1", f"{block}r2"):
                for index in range(2):
                    found[f"n-{rack}-{index}"] = (zone, block, rack)
    return found


LAYOUT = layout()


def nodes() -> list[Obj]:
    return [
        node(name, cpu="4", labels={ZONE: zone, BLOCK: block, RACK: rack})
        for name, (zone, block, rack) in LAYOUT.items()
    ]


def busy(name: str, cpu: str) -> Obj:
    return pod(f"busy-{name}", cpu=cpu, node_name=name)


def busy_rack(rack: str, cpu: str) -> list[Obj]:
    return [busy(f"n-{rack}-{index}", cpu) for index in range(2)]


def run(*objects: Obj) -> CycleResult:
    return schedule(cluster(*nodes(), *objects), now=NOW, config=CONFIG)


def level_of(node_name: str, key: str) -> str:
    return LAYOUT[node_name][LEVELS.index(key)]


def racks_by_slice(placements: dict[str, str], size: int, key: str = RACK) -> list[set[str]]:
    """The domains of `key` each slice of `g-<i>` members sits in, in slice order."""
    slices: dict[int, set[str]] = {}
    for name, node_name in placements.items():
        index = int(name.rsplit("-", 1)[1]) // size
        slices.setdefault(index, set()).add(level_of(node_name, key))
    return [slices[index] for index in sorted(slices)]


def test_members_are_cut_by_completion_index_where_every_one_has_one() -> None:
    assert slice_ids([("b", 0), ("a", 3), ("c", 2), ("d", 1)], 2) == {
        "b": 0,
        "d": 0,
        "c": 1,
        "a": 1,
    }
    assert slice_ids([("b", 0), ("a", None), ("c", 2)], 2) == {"a": 0, "b": 0, "c": 1}


def test_a_slice_with_placed_members_is_anchored_to_their_domain() -> None:
    values = np.array([0, 0, 1, 1, -1], dtype=np.int32)
    members = [
        SliceMember("p0", 0, 2),
        SliceMember("p1", 1, None),
        SliceMember("p2", 2, None),
        SliceMember("p3", 3, None),
        SliceMember("p4", 4, 4),  # on a node without the slice level's label
        SliceMember("p5", 5, None),
    ]
    slicing = slicing_of(RACK, 2, values, ("r0", "r1"), members)
    assert slicing.groups == (("p1",), ("p2", "p3"), ("p5",))
    assert slicing.anchors == (1, -1, -1)


def test_a_block_without_room_for_the_slices_is_passed_over() -> None:
    # Each block of zone a has 8 cpu free, but in racks of 5 and 3: one slice of 4 each.
    room = [
        busy(f"n-{block}{rack}", cpu)
        for block in ("a1", "a2")
        for rack, cpu in (("r1-0", "2"), ("r1-1", "1"), ("r2-0", "2"), ("r2-1", "3"))
    ]
    full = [busy(name, "4") for name in LAYOUT if name.startswith("n-b")]
    result = run(*room, *full, *gang("g", 8, cpu="1", preferred_key=BLOCK, slicing=(RACK, 4)))
    (admission,) = result.admissions
    assert admission.domain == (ZONE, "a")
    assert admission.passed_over == (
        "no block domain has room for 8 pods in slices of 4 per rack: a1 takes 4",
    )
    assert racks_by_slice(admission.placements, 4) == [{"a1r1"}, {"a2r1"}]


def test_slices_of_a_gang_in_one_block_take_the_tightest_racks() -> None:
    result = run(
        busy("n-a1r1-0", "2"),  # a1r1 has 6 free: the tightest rack that holds a slice of 4
        *gang("g", 8, cpu="1", preferred_key=BLOCK, slicing=(RACK, 4)),
    )
    (admission,) = result.admissions
    assert admission.domain == (BLOCK, "a1")
    assert racks_by_slice(admission.placements, 4) == [{"a1r1"}, {"a1r2"}]


def test_without_slices_the_same_gang_would_straddle_racks() -> None:
    objects = [busy("n-a1r1-0", "2"), busy("n-a1r2-0", "2")]
    plain = run(*objects, *gang("g", 8, cpu="1", preferred_key=BLOCK))
    (admission,) = plain.admissions
    assert admission.domain == (BLOCK, "a1")
    assert any(len(racks) > 1 for racks in racks_by_slice(admission.placements, 4))
    sliced = run(*objects, *gang("g", 8, cpu="1", preferred_key=BLOCK, slicing=(RACK, 4)))
    (admission,) = sliced.admissions
    assert all(len(racks) == 1 for racks in racks_by_slice(admission.placements, 4))


def test_slices_follow_the_completion_index_not_the_name() -> None:
    members = [
        pod(
            f"g-{name}",
            group="g",
            cpu="4",
            labels={COMPLETION_INDEX_KEY: str(index)},
        )
        for name, index in (("a", 0), ("b", 2), ("c", 1), ("d", 3))
    ]
    result = run(pod_group("g", min_count=4, topology_key=BLOCK, slicing=(RACK, 2)), *members)
    (admission,) = result.admissions
    rack = {name: level_of(node_name, RACK) for name, node_name in admission.placements.items()}
    assert rack["g-a"] == rack["g-c"]
    assert rack["g-b"] == rack["g-d"]
    assert rack["g-a"] != rack["g-b"]


def test_a_gang_whose_slices_fit_nowhere_says_no_rack_has_room_for_a_slice() -> None:
    result = run(*gang("g", 10, cpu="1", slicing=(RACK, 10)))
    assert not result.admissions
    message = result.verdicts[KEY].message
    assert "the gang needs 10 pods in slices of 10, each in one rack domain" in message
    assert "no rack domain has room for a slice of 10: a1r1 takes 8" in message


def test_a_replaced_member_rejoins_its_slice_in_its_rack() -> None:
    plan = {f"g-{index}": f"n-a1r{1 + index // 2}-{index % 2}" for index in range(3)}
    members = [
        pod(f"g-{index}", group="g", node_name=plan[f"g-{index}"], cpu="1") for index in (0, 1, 2)
    ]
    replacement = pod("g-3", group="g", cpu="1")
    result = run(
        pod_group("g", min_count=4, admitted=True, plan=plan, slicing=(RACK, 2)),
        *members,
        replacement,
        *busy_rack("b1r1", "3"),  # the tightest rack: a slice free to choose would go there
    )
    (growth,) = result.growths
    assert {level_of(node_name, RACK) for node_name in growth.placements.values()} == {"a1r2"}


@pytest.mark.parametrize(("key", "size"), [(BLOCK, 2), (ZONE, 4)])
def test_inter_pod_rules_hold_across_slices(key: str, size: int) -> None:
    anti = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": RACK}
                ]
            }
        }
    }
    result = run(*gang("g", 4, cpu="1", labels={"app": "x"}, spec=anti, slicing=(key, size)))
    (admission,) = result.admissions
    racks = [level_of(node_name, RACK) for node_name in admission.placements.values()]
    assert len(set(racks)) == 4  # one pod per rack, slice after slice
    assert all(len(found) == 1 for found in racks_by_slice(admission.placements, size, key))


def test_preemption_makes_room_for_whole_slices() -> None:
    low = [pod(f"low-{name}", cpu="4", node_name=name, priority=1) for name in LAYOUT]
    result = run(*low, *gang("g", 4, cpu="4", priority=10, preferred_key=BLOCK, slicing=(RACK, 2)))
    (admission,) = result.admissions
    assert admission.domain is not None and admission.domain[0] == BLOCK
    assert len(admission.victims) == 4
    assert all(len(racks) == 1 for racks in racks_by_slice(admission.placements, 2))


def test_pods_alone_on_their_nodes_stay_alone_across_slices() -> None:
    alone = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": HOSTNAME}
                ]
            }
        }
    }
    result = run(*gang("g", 4, cpu="1", labels={"app": "x"}, spec=alone, slicing=(BLOCK, 2)))
    (admission,) = result.admissions
    assert len(set(admission.placements.values())) == 4
    assert all(len(found) == 1 for found in racks_by_slice(admission.placements, 2, BLOCK))


def test_a_gang_kept_together_tries_each_zone_when_its_first_slice_leads_astray() -> None:
    together = {
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": ZONE}
                ]
            }
        }
    }
    # Zone a has 2 cpu free, in block a1: the tightest block for a first slice of 2.
    full = [busy(name, "4") for name in LAYOUT if name.startswith("n-a") and name != "n-a1r1-0"]
    objects = [*full, busy("n-a1r1-0", "2")]
    members = gang("g", 4, cpu="1", labels={"app": "x"}, spec=together, slicing=(BLOCK, 2))
    (admission,) = run(*objects, *members).admissions
    assert {level_of(node_name, ZONE) for node_name in admission.placements.values()} == {"b"}
    assert all(len(found) == 1 for found in racks_by_slice(admission.placements, 2, BLOCK))


def test_the_admitted_condition_names_the_slices() -> None:
    result = run(*gang("g", 8, cpu="1", preferred_key=BLOCK, slicing=(RACK, 4)))
    status = result.plan.statuses[KEY]
    (condition,) = [c for c in status["conditions"] if c["type"] == "PodGroupScheduled"]
    assert condition["message"] == "8 pods placed in block=a1 in slices of 4 per rack"
