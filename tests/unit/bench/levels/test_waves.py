from __future__ import annotations

from dataclasses import replace
from typing import Any

from bench.levels.shape import ANYWHERE, BLOCK_KEY, NOT_BOUND, RACK_KEY, Shape, make_nodes
from bench.levels.waves import (
    SHORT_HOLD,
    Moments,
    finished_jobs,
    finished_workloads,
    in_use,
    make_waves,
)

from tests.unit.bench.levels.test_shape import gang, running

NODES = make_nodes(Shape())


def rack(name: str) -> list[str]:
    return [f"gpu-{name}-n{host}" for host in range(4)]


def test_the_waves_are_reproducible_with_half_the_first_wave_short_and_names_apart() -> None:
    waves = make_waves(seed=3)
    assert waves == make_waves(seed=3)
    assert len(waves.first) == len(waves.second) == 16
    assert len(waves.short) == 8
    assert {job.hold for job in waves.first} == {SHORT_HOLD, None}
    assert {job.hold for job in waves.second} == {None}
    assert len({job.name for job in waves.jobs}) == 32
    assert waves.demand_after_churn == sum(job.gpus for job in waves.jobs) - sum(
        job.gpus for job in waves.first if job.name in waves.short
    )
    assert make_waves(seed=4).short != waves.short


def test_a_gang_is_judged_against_the_others_bound_when_it_is_first_seen() -> None:
    # Three racks of block zone-a-b0 full, the fourth with one node left: a 4 x 8 gang
    # bound then across two racks could not have had one rack of that block, but could
    # have had one elsewhere; a 1 x 8 gang in the free node sat at its narrowest.
    full = gang("full", 15, 8)
    wide, small = gang("wide", 4, 8), gang("small", 1, 8)
    moments = Moments([full, wide, small], NODES)
    taken = running(
        full, *rack("a-b0-r0"), *rack("a-b0-r1"), *rack("a-b0-r2"), *rack("a-b0-r3")[:3]
    )
    assert moments.observe(taken, at=1.0) == ["full"]
    assert moments.seen["full"].placed == BLOCK_KEY
    later = [*taken, *running(wide, *rack("a-b1-r0")[:2], *rack("a-b1-r1")[:2])]
    later += running(small, "gpu-a-b0-r3-n3")
    assert moments.observe(later, at=3.0) == ["wide", "small"]
    assert (moments.seen["wide"].placed, moments.seen["wide"].feasible) == (BLOCK_KEY, RACK_KEY)
    assert (moments.seen["small"].placed, moments.seen["small"].feasible) == (RACK_KEY, RACK_KEY)
    assert moments.observe(later, at=4.0) == []  # judged once
    assert moments.figures(later)["wider_than_room"] == {
        "wide": f"in {BLOCK_KEY}, {RACK_KEY} had room"
    }
    assert moments.bound_after({"wide": 1.5, "small": 2.0}) == [1.5, 1.0]


def test_the_figures_count_gangs_never_bound_and_what_the_end_leaves_free() -> None:
    done = replace(gang("done", 4, 8), hold=SHORT_HOLD)
    kept, queued = gang("kept", 2, 8), gang("queued", 2, 8)
    moments = Moments([done, kept, queued], NODES)
    first = [*running(done, *rack("a-b0-r0")), *running(kept, *rack("a-b0-r1")[:2])]
    moments.observe(first, at=1.0)
    end = [
        *running(done, *rack("a-b0-r0"), phase="Succeeded"),
        *running(kept, *rack("a-b0-r1")[:2]),
    ]
    figures = moments.figures(end)
    assert figures["placed_at"] == {RACK_KEY: 2, NOT_BOUND: 1}
    assert figures["at_narrowest_feasible"] == {"placed": 2, "share": 0.667}
    assert figures["one_rack"] == {"could": 3, "placed": 2, "share": 0.667}
    assert figures["not_all_bound"] == 1
    # The short gang finished; only the one never bound is not running at the end.
    assert figures["waiting_at_end"] == 1
    assert figures["domains"]["queued"] == NOT_BOUND
    assert (figures["free_racks"], figures["free_gpus"]) == (15, 512 - 16)
    assert in_use(end) == {"gpu-a-b0-r1-n0": 8, "gpu-a-b0-r1-n1": 8}


def test_a_gang_no_zone_has_room_for_any_more_is_judged_anywhere() -> None:
    big = gang("big", 40, 8)
    moments = Moments([big], NODES)
    nodes = [node["metadata"]["name"] for node in NODES[:40]]
    moments.observe(running(big, *nodes), at=1.0)
    assert moments.seen["big"].feasible == ANYWHERE == moments.seen["big"].placed
    assert moments.figures(running(big, *nodes))["at_narrowest_feasible"]["placed"] == 1


def test_a_short_gang_is_over_once_its_job_is_complete_and_its_workload_finished() -> None:
    def body(name: str, condition: str, status: str, owner: str | None = None) -> dict[str, Any]:
        owners = [{"kind": "Job", "name": owner}] if owner else []
        conditions = [{"type": condition, "status": status}]
        return {
            "metadata": {"name": name, "ownerReferences": owners},
            "status": {"conditions": conditions},
        }

    jobs = [
        body("a", "Complete", "True"),
        body("b", "Complete", "False"),
        {"metadata": {"name": "c"}},
    ]
    assert finished_jobs(jobs) == {"a"}
    workloads = [
        body("job-a-1", "Finished", "True", owner="a"),
        body("job-b-1", "Admitted", "True", owner="b"),
        body("orphan", "Finished", "True"),
    ]
    assert finished_workloads(workloads) == {"a"}


def test_pods_given_their_node_but_not_bound_yet_take_room_from_the_others() -> None:
    # Two racks: half of r0 held by a gang whose pods are only pinned yet (one by Kueue's
    # hostname nodeSelector, one by Muster's node-name affinity), half of r1 by a gang
    # bound. A 4 x 8 gang across the other halves had no rack with room for it.
    decided, other, split = gang("decided", 2, 8), gang("other", 2, 8), gang("split", 4, 8)
    moments = Moments([decided, other, split], NODES[:8])
    first, second = running(decided, *rack("a-b0-r0")[:2])
    first["spec"]["nodeSelector"] = {"kubernetes.io/hostname": first["spec"].pop("nodeName")}
    pin = {"key": "metadata.name", "operator": "In", "values": [second["spec"].pop("nodeName")]}
    terms = {"nodeSelectorTerms": [{"matchFields": [pin]}]}
    second["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}
    }
    pods = [first, second, *running(other, *rack("a-b0-r1")[2:])]
    pods += running(split, *rack("a-b0-r0")[2:], *rack("a-b0-r1")[:2])
    assert moments.observe(pods, at=1.0) == ["other", "split"]
    assert (moments.seen["split"].placed, moments.seen["split"].feasible) == (BLOCK_KEY, BLOCK_KEY)
    spanned = moments.figures(pods)["racks_spanned_by_wider_gangs"]
    assert spanned == {"gangs": 1, "racks": 2}
