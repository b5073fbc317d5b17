"""Preferred topology levels: the ladder of keys, the domains of a level, whole cycles."""

from __future__ import annotations

import numpy as np
import pytest

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import CycleResult
from muster.scheduler.placement.levels import ladder, level_domains
from tests.unit.scheduler.builders import Obj, cluster, gang, node, node_table, pod

NOW = 1_798_761_600.0
ZONE, BLOCK, RACK = "zone", "block", "rack"
LEVELS = (ZONE, BLOCK, RACK)
CONFIG = EngineConfig(starvation_seconds=10**12, topology_levels=LEVELS)

# zone a: block a1 (racks r1, r2), block a2 (rack r3); zone b: block b1 (rack r4).
LAYOUT = {
    "n1": ("a", "a1", "r1"),
    "n2": ("a", "a1", "r1"),
    "n3": ("a", "a1", "r2"),
    "n4": ("a", "a1", "r2"),
    "n5": ("a", "a2", "r3"),
    "n6": ("b", "b1", "r4"),
    "n7": ("b", "b1", "r4"),
}


def nodes() -> list[Obj]:
    return [
        node(name, cpu="4", labels={ZONE: zone, BLOCK: block, RACK: rack})
        for name, (zone, block, rack) in LAYOUT.items()
    ]


def busy(name: str, cpu: str) -> Obj:
    return pod(f"busy-{name}", cpu=cpu, node_name=name)


def run(*objects: Obj, config: EngineConfig = CONFIG) -> CycleResult:
    return schedule(cluster(*nodes(), *objects), now=NOW, config=config)


def placed_on(result: CycleResult, name: str) -> set[str]:
    (admission,) = [a for a in result.admissions if a.group == GroupKey("default", name)]
    return set(admission.placements.values())


@pytest.mark.parametrize(
    ("preferred", "required", "levels", "expected"),
    [
        (RACK, None, LEVELS, (RACK, BLOCK, ZONE)),
        (BLOCK, None, LEVELS, (BLOCK, ZONE)),
        (RACK, ZONE, LEVELS, (RACK, BLOCK)),
        (RACK, BLOCK, LEVELS, (RACK,)),
        (BLOCK, RACK, LEVELS, ()),  # the required domain is narrower already
        (RACK, RACK, LEVELS, ()),
        (RACK, None, (), (RACK,)),  # no configured level: the preferred key alone
        ("other", ZONE, LEVELS, ("other",)),
        (ZONE, ZONE, (), ()),
        (RACK, "elsewhere", LEVELS, (RACK, BLOCK, ZONE)),
    ],
)
def test_the_ladder_goes_from_the_preferred_level_to_the_required_one(
    preferred: str, required: str | None, levels: tuple[str, ...], expected: tuple[str, ...]
) -> None:
    assert ladder(preferred, required, levels) == expected


def test_a_level_is_cut_by_the_required_domains() -> None:
    table = node_table(
        node("x", labels={ZONE: "a", RACK: "r1"}),
        node("y", labels={ZONE: "b", RACK: "r1"}),
        node("z", labels={ZONE: "b", RACK: "r0"}),
        node("w", labels={RACK: "r0"}),
    )
    domains = level_domains(table.labels, RACK, ZONE)
    assert domains.names == ("r0", "r1", "r1")
    assert domains.values.tolist() == [1, 2, 0, -1]
    whole = level_domains(table.labels, RACK, None)
    assert sorted(whole.names) == ["r0", "r1"]
    assert np.unique(whole.values).size == 2


@pytest.mark.parametrize(
    ("busy_pods", "size", "domain"),
    [
        ((), 2, (RACK, "r3")),  # every rack fits: r3 is the tightest (fewest copies)
        ((), 7, (RACK, "r1")),  # r1, r2, r4 tie: the first name
        ((busy("n1", "2"),), 7, (RACK, "r2")),  # r1 is short now
        ((busy("n1", "2"), busy("n3", "2")), 8, (RACK, "r4")),
        ((busy("n6", "1"), busy("n1", "1"), busy("n3", "1")), 8, (BLOCK, "a1")),
        ((busy("n1", "4"), busy("n2", "4"), busy("n6", "1")), 9, (ZONE, "a")),
    ],
)
def test_the_narrowest_level_with_room_and_its_tightest_domain(
    busy_pods: tuple[Obj, ...], size: int, domain: tuple[str, str]
) -> None:
    result = run(*busy_pods, *gang("g", size, cpu="1", preferred_key=RACK))
    (admission,) = result.admissions
    assert admission.domain == domain
    key, value = domain
    assert {LAYOUT[name][LEVELS.index(key)] for name in placed_on(result, "g")} == {value}
    assert len(admission.passed_over) == LEVELS[::-1].index(key)


def test_a_gang_falls_back_to_one_block_and_says_why_not_one_rack() -> None:
    result = run(
        busy("n1", "1"),
        busy("n3", "1"),
        busy("n6", "1"),
        *gang("g", 9, cpu="1", preferred_key=RACK),
    )
    (admission,) = result.admissions
    assert admission.domain == (BLOCK, "a1")
    assert admission.passed_over == ("no rack domain has room for 9 pods: r1 takes 7",)


def test_the_levels_of_a_kueue_topology_win_over_the_configured_ones() -> None:
    topology = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "gpus"},
        "spec": {"levels": [{"nodeLabel": key} for key in LEVELS]},
    }
    objects = (
        busy("n1", "1"),
        busy("n3", "1"),
        busy("n6", "1"),
        *gang("g", 9, cpu="1", preferred_key=RACK),
    )
    unordered = run(*objects, config=EngineConfig(starvation_seconds=10**12))
    assert unordered.admissions[0].domain is None  # no level above rack known: anywhere
    (admission,) = run(
        topology, *objects, config=EngineConfig(starvation_seconds=10**12)
    ).admissions
    assert admission.domain == (BLOCK, "a1")


def test_beyond_every_level_the_gang_goes_anywhere_allowed() -> None:
    result = run(*gang("g", 21, cpu="1", preferred_key=RACK))
    (admission,) = result.admissions
    assert admission.domain is None
    assert len(admission.placements) == 21
    assert admission.passed_over == (
        "no rack domain has room for 21 pods: r1 takes 8",
        "no block domain has room for 21 pods: a1 takes 16",
        "no zone domain has room for 21 pods: a takes 20",
    )


def test_a_preference_stays_inside_the_required_domain() -> None:
    result = run(*gang("g", 3, cpu="1", preferred_key=RACK, topology_key=ZONE))
    (admission,) = result.admissions
    assert admission.domain == (RACK, "r3")
    result = run(busy("n5", "2"), *gang("g", 3, cpu="1", preferred_key=RACK, topology_key=ZONE))
    (admission,) = result.admissions
    assert admission.domain == (RACK, "r1")
    result = run(*gang("g", 17, cpu="1", preferred_key=RACK, topology_key=ZONE))
    (admission,) = result.admissions
    assert admission.domain == (ZONE, "a")
    assert [text.split(":")[0] for text in admission.passed_over] == [
        "no rack domain has room for 17 pods",
        "no block domain has room for 17 pods",
    ]


def test_a_key_of_no_level_is_tried_alone_then_the_required_domain() -> None:
    config = EngineConfig(starvation_seconds=10**12)
    result = run(*gang("g", 2, cpu="1", preferred_key=RACK), config=config)
    assert result.admissions[0].domain == (RACK, "r3")
    result = run(*gang("g", 9, cpu="1", preferred_key=RACK), config=config)
    (admission,) = result.admissions
    assert admission.domain is None
    assert admission.passed_over == ("no rack domain has room for 9 pods: r1 takes 8",)


def test_the_admitted_condition_says_where_and_why_not_narrower() -> None:
    result = run(
        busy("n1", "1"),
        busy("n3", "1"),
        busy("n6", "1"),
        *gang("g", 9, cpu="1", preferred_key=RACK),
    )
    status = result.plan.statuses[GroupKey("default", "g")]
    (condition,) = [c for c in status["conditions"] if c["type"] == "PodGroupScheduled"]
    assert condition["message"] == (
        "9 pods placed in block=a1 (no rack domain has room for 9 pods: r1 takes 7)"
    )


def test_an_unfit_gang_is_told_about_its_required_domains_as_before() -> None:
    result = run(*gang("g", 30, cpu="1", preferred_key=RACK, topology_key=ZONE))
    assert not result.admissions
    verdict = result.verdicts[GroupKey("default", "g")]
    assert "zone" in verdict.message


def test_preemption_honours_the_preference() -> None:
    low = [
        pod(f"low-{name}", cpu="4", node_name=name, priority=1)
        for name in ("n1", "n2", "n3", "n4", "n5", "n6", "n7")
    ]
    result = run(*low, *gang("g", 2, cpu="4", preferred_key=RACK, priority=10))
    (admission,) = result.admissions
    assert admission.domain == (RACK, "r1")
    assert len(admission.victims) == 2


def test_a_gang_that_falls_back_to_a_block_fills_it_rack_by_rack() -> None:
    # One block of three racks of two 4-CPU nodes, pods of 2 CPUs: r1 has room for 1
    # pod, r2 (empty) for 4, r3 for 2 on nodes each half used. Node by node, best fit
    # would take the half-used nodes first and touch every rack; rack by rack, the
    # gang takes the roomiest rack and the rest where it fits most tightly.
    layout = {"p1": "r1", "p2": "r1", "q1": "r2", "q2": "r2", "s1": "r3", "s2": "r3"}
    racks = [
        node(name, cpu="4", labels={ZONE: "a", BLOCK: "a1", RACK: rack})
        for name, rack in layout.items()
    ]
    result = schedule(
        cluster(
            *racks,
            busy("p1", "4"),
            busy("p2", "2"),
            busy("s1", "2"),
            busy("s2", "2"),
            *gang("g", 5, cpu="2", preferred_key=RACK),
        ),
        now=NOW,
        config=CONFIG,
    )
    (admission,) = result.admissions
    assert admission.domain == (BLOCK, "a1")
    assert placed_on(result, "g") == {"q1", "q2", "p2"}


def test_a_preferred_level_no_node_carries_is_named_as_such() -> None:
    """Not as a level whose domains have no room: it has no domain at all."""
    result = run(*gang("g", 4, cpu="1", preferred_key="example.com/rack"))
    (admission,) = result.admissions
    assert admission.passed_over == ("no node carries example.com/rack",)
    status = result.plan.statuses[GroupKey("default", "g")]
    (condition,) = [c for c in status["conditions"] if c["type"] == "PodGroupScheduled"]
    assert condition["message"] == "4 pods placed (no node carries example.com/rack)"


def test_a_required_rack_inside_a_preferred_zone_is_named_for_the_rack() -> None:
    """With no order of levels known, the zone is tried cut by the racks; each rack
    lies inside one zone, so the rack is what kept the gang together."""
    config = EngineConfig(starvation_seconds=10**12)
    result = run(*gang("g", 3, cpu="1", preferred_key=ZONE, topology_key=RACK), config=config)
    (admission,) = result.admissions
    assert admission.domain == (RACK, "r3")
    status = result.plan.statuses[GroupKey("default", "g")]
    (condition,) = [c for c in status["conditions"] if c["type"] == "PodGroupScheduled"]
    assert condition["message"] == "3 pods placed in rack=r3"


def test_a_preferred_rack_inside_a_required_zone_is_still_named_for_the_rack() -> None:
    config = EngineConfig(starvation_seconds=10**12)
    result = run(*gang("g", 3, cpu="1", preferred_key=RACK, topology_key=ZONE), config=config)
    assert result.admissions[0].domain == (RACK, "r3")
