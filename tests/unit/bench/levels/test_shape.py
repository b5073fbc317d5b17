from __future__ import annotations

from collections import Counter
from typing import Any

from bench.e2e.workload import GPU, ZONE_KEY, GangJob
from bench.levels.shape import (
    ANYWHERE,
    BLOCK_KEY,
    NOT_BOUND,
    RACK_KEY,
    Shape,
    fragmentation,
    judge,
    make_nodes,
    make_workload,
    narrowest_feasible,
    placement,
)

from tests.unit.bench.pods import pod

NODES = make_nodes(Shape())


def gang(name: str, size: int, gpus: int) -> GangJob:
    return GangJob(name, size, gpus, topology_key=None, preferred_key=RACK_KEY)


def running(job: GangJob, *nodes: str, phase: str = "Running") -> list[dict[str, Any]]:
    """The pods of ``job`` bound to ``nodes``, one each, asking its GPUs."""
    made = []
    for index, node in enumerate(nodes):
        member = pod(job.name, f"{job.name}-{index}", node=node, phase=phase)
        requests = {"cpu": "100m", GPU: str(job.gpus_per_pod)}
        member["spec"]["containers"] = [{"name": "worker", "resources": {"requests": requests}}]
        made.append(member)
    return made


def test_the_cluster_has_every_level_named_uniquely() -> None:
    assert len(NODES) == Shape().nodes == 64
    domains = {
        key: Counter(node["metadata"]["labels"][key] for node in NODES)
        for key in (ZONE_KEY, BLOCK_KEY, RACK_KEY)
    }
    assert (len(domains[ZONE_KEY]), len(domains[BLOCK_KEY]), len(domains[RACK_KEY])) == (2, 4, 16)
    assert set(domains[RACK_KEY].values()) == {4}
    assert {node["metadata"]["labels"][RACK_KEY] for node in NODES[:4]} == {"zone-a-b0-r0"}


def test_the_burst_is_reproducible_prefers_racks_and_asks_two_thirds_of_the_gpus() -> None:
    jobs = make_workload(rounds=2, seed=7)
    assert jobs == make_workload(rounds=2, seed=7)
    assert {job.preferred_key for job in jobs} == {RACK_KEY}
    assert sum(job.gpus for job in jobs) / Shape().gpus == 344 / 512
    assert Counter(narrowest_feasible(job, NODES) for job in jobs) == {RACK_KEY: 12, BLOCK_KEY: 4}


def test_a_gang_fits_the_narrowest_level_with_room_for_it_when_empty() -> None:
    assert narrowest_feasible(gang("g", 4, 8), NODES) == RACK_KEY  # a whole rack
    assert narrowest_feasible(gang("g", 5, 8), NODES) == BLOCK_KEY
    assert narrowest_feasible(gang("g", 16, 8), NODES) == BLOCK_KEY  # a whole block
    assert narrowest_feasible(gang("g", 17, 8), NODES) == ZONE_KEY
    assert narrowest_feasible(gang("g", 33, 8), NODES) == ANYWHERE


def test_placement_counts_gangs_at_each_level_and_what_is_left_free() -> None:
    in_rack, in_block, spread, partial = (
        gang("in-rack", 2, 8),
        gang("in-block", 5, 8),
        gang("spread", 2, 4),
        gang("partial", 4, 4),
    )
    pods = [
        *running(in_rack, "gpu-a-b0-r0-n0", "gpu-a-b0-r0-n1"),
        *running(in_block, *(f"gpu-a-b0-r1-n{host}" for host in range(4)), "gpu-a-b0-r2-n0"),
        *running(spread, "gpu-a-b0-r3-n0", "gpu-b-b0-r0-n0"),
        *running(partial, "gpu-a-b1-r0-n0", "gpu-a-b1-r0-n1", "gpu-a-b1-r0-n2"),
        *running(gang("done", 1, 8), "gpu-b-b1-r3-n0", phase="Succeeded"),
        pod(partial.name, "partial-3"),  # not bound yet
    ]
    figures = placement([in_rack, in_block, spread, partial], pods, NODES)
    assert figures["placed_at"] == {RACK_KEY: 1, BLOCK_KEY: 1, ANYWHERE: 1, NOT_BOUND: 1}
    assert figures["one_rack"] == {"could": 3, "placed": 1, "share": 0.333}
    assert figures["one_block"] == {"could": 4, "placed": 2, "share": 0.5}
    assert figures["at_narrowest_feasible"] == {"placed": 2, "share": 0.5}
    assert figures["not_all_bound"] == 1
    assert figures["domains"] == {
        "in-rack": f"{RACK_KEY}=zone-a-b0-r0",
        "in-block": f"{BLOCK_KEY}=zone-a-b0",
        "spread": ANYWHERE,
        "partial": NOT_BOUND,
    }
    # 16 + 40 + 8 + 12 GPUs used, in six racks; the finished pod holds none.
    assert figures["free_gpus"] == 512 - 76
    assert (figures["free_racks"], figures["free_gpus_in_free_racks"]) == (10, 320)


def test_the_same_gpus_packed_in_one_rack_leave_more_whole_racks_than_spread() -> None:
    packed = {f"gpu-a-b0-r0-n{host}": 4 for host in range(4)}
    spread = {f"gpu-a-b0-r{rack}-n0": 4 for rack in range(4)}
    assert fragmentation(NODES, packed) == {
        "free_gpus": 496,
        "free_gpus_in_free_racks": 480,
        "free_racks": 15,
        "racks": 16,
    }
    assert fragmentation(NODES, spread)["free_gpus_in_free_racks"] == 384


def test_a_gang_fits_only_the_room_others_leave() -> None:
    # Every rack of the first block but one has a node taken: a 4 x 8 gang still has a
    # rack there; with that one's node taken too, only another block has one.
    block = [f"gpu-a-b0-r{rack}-n0" for rack in range(4)]
    assert narrowest_feasible(gang("g", 4, 8), NODES[:16], dict.fromkeys(block[:3], 8)) == RACK_KEY
    assert narrowest_feasible(gang("g", 4, 8), NODES[:16], dict.fromkeys(block, 8)) == BLOCK_KEY
    assert narrowest_feasible(gang("g", 4, 8), NODES, dict.fromkeys(block, 8)) == RACK_KEY


def test_gangs_wider_than_they_could_be_or_never_bound_are_not_at_their_narrowest() -> None:
    figures = judge(
        {"a": RACK_KEY, "b": RACK_KEY, "c": ANYWHERE, "d": BLOCK_KEY},
        {"a": RACK_KEY, "b": BLOCK_KEY, "c": ANYWHERE, "d": NOT_BOUND},
    )
    assert figures["one_rack"] == {"could": 2, "placed": 1, "share": 0.5}
    assert figures["one_block"] == {"could": 3, "placed": 2, "share": 0.667}
    assert figures["at_narrowest_feasible"] == {"placed": 2, "share": 0.5}
    assert figures["not_all_bound"] == 1
