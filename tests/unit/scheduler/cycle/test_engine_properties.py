"""Properties of whole cycles over random small clusters (hypothesis).

Never a partial gang, never an over-committed node, topology respected, the same
input always gives the same result, and whenever a brute-force search finds a
placement for a gang the engine finds one too (exactly for gangs of one shape; for
mixed shapes the greedy's known gap is measured, see `test_mixed_shape_gap_is_small`).
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.decisions.results import CycleResult
from tests.unit.scheduler.builders import Obj, cluster, node, pod, pod_group

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12)
SHAPES = [(1, 0), (2, 0), (1, 1), (3, 2)]  # (cpu cores, gpus)


@dataclass(frozen=True)
class Scenario:
    nodes: list[tuple[str, int, int, str | None]]  # name, cpu, gpu, zone
    bound: list[tuple[str, str, int, int, int]]  # pod, node, cpu, gpu, priority
    gangs: list[tuple[str, list[int], int, bool, int]]  # name, shape ids, minCount, zoned, prio

    def objects(self) -> list[Obj]:
        objects = [
            node(name, cpu=str(cpu), gpu=str(gpu), labels={"zone": zone} if zone else {})
            for name, cpu, gpu, zone in self.nodes
        ]
        objects += [
            pod(name, cpu=str(cpu), gpu=str(gpu), node_name=on, priority=priority)
            for name, on, cpu, gpu, priority in self.bound
        ]
        for index, (name, shapes, min_count, zoned, priority) in enumerate(self.gangs):
            objects.append(
                pod_group(
                    name,
                    min_count=min_count,
                    topology_key="zone" if zoned else None,
                    priority=priority,
                    created=f"2026-01-01T00:00:0{index}Z",
                )
            )
            objects += members(name, shapes, priority)
        return objects


def members(name: str, shapes: list[int], priority: int, **pod_args: Any) -> list[Obj]:
    """The gang's pods, one of each shape (`SHAPES`), gated."""
    return [
        pod(
            f"{name}-{member}",
            group=name,
            cpu=str(SHAPES[shape][0]),
            gpu=str(SHAPES[shape][1]),
            priority=priority,
            **pod_args,
        )
        for member, shape in enumerate(shapes)
    ]


@st.composite
def scenarios(draw: st.DrawFn, max_gangs: int = 3) -> Scenario:
    node_count = draw(st.integers(1, 4))
    nodes = [
        (
            f"n{index}",
            draw(st.integers(1, 6)),
            draw(st.integers(0, 3)),
            draw(st.sampled_from(["a", "b", None])),
        )
        for index in range(node_count)
    ]
    bound = []
    for name, node_cpu, node_gpu, _ in nodes:
        cpu_left, gpu_left = node_cpu, node_gpu
        for index in range(draw(st.integers(0, 2))):
            pod_cpu, pod_gpu = draw(st.integers(0, cpu_left)), draw(st.integers(0, gpu_left))
            cpu_left, gpu_left = cpu_left - pod_cpu, gpu_left - pod_gpu
            bound.append((f"{name}-bound-{index}", name, pod_cpu, pod_gpu, draw(st.integers(0, 2))))
    gangs = []
    for index in range(draw(st.integers(1, max_gangs))):
        shapes = draw(st.lists(st.integers(0, len(SHAPES) - 1), min_size=1, max_size=4))
        gangs.append(
            (
                f"g{index}",
                shapes,
                draw(st.integers(1, len(shapes))),
                draw(st.booleans()),
                draw(st.integers(0, 3)),
            )
        )
    return Scenario(nodes, bound, gangs)


def _usage_after(scenario: Scenario, result: CycleResult) -> dict[str, list[int]]:
    """cpu and gpu used per node once victims are gone and every placement has landed."""
    gone = {victim.pod.name for admission in result.admissions for victim in admission.victims}
    usage: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name, on, cpu, gpu, _ in scenario.bound:
        if name not in gone:
            usage[on][0] += cpu
            usage[on][1] += gpu
    shapes = {
        f"{name}-{member}": SHAPES[shape]
        for name, members, *_ in scenario.gangs
        for member, shape in enumerate(members)
    }
    placements = [admission.placements for admission in result.admissions]
    placements += [growth.placements for growth in result.growths]
    for placement in placements:
        for pod_name, on in placement.items():
            usage[on][0] += shapes[pod_name][0]
            usage[on][1] += shapes[pod_name][1]
    return usage


@settings(max_examples=150, deadline=None)
@given(scenarios(), st.sampled_from([CONFIG, EngineConfig(starvation_seconds=0)]))
def test_admissions_are_whole_fit_and_respect_topology(
    scenario: Scenario, config: EngineConfig
) -> None:
    """Also when every gang is starving and holds nodes."""
    result = schedule(cluster(*scenario.objects()), now=NOW, config=config)
    capacity = {name: (cpu, gpu) for name, cpu, gpu, _ in scenario.nodes}
    zones = {name: zone for name, _, _, zone in scenario.nodes}
    gangs = {
        name: (shapes, min_count, zoned) for name, shapes, min_count, zoned, _ in scenario.gangs
    }
    priorities = {name: priority for name, *_, priority in scenario.gangs}
    victims = [victim.pod for admission in result.admissions for victim in admission.victims]
    assert len(victims) == len(set(victims))
    for admission in result.admissions:
        assert all(
            victim.priority < priorities[admission.group.name] for victim in admission.victims
        )
        shapes, min_count, zoned = gangs[admission.group.name]
        members = {f"{admission.group.name}-{index}" for index in range(len(shapes))}
        assert len(admission.placements) >= min_count
        assert set(admission.placements) <= members
        if zoned:
            assert admission.domain is not None
            assert {zones[on] for on in admission.placements.values()} == {admission.domain[1]}
    for name, (cpu, gpu) in _usage_after(scenario, result).items():
        assert cpu <= capacity[name][0] and gpu <= capacity[name][1], name
    decided = {admission.group for admission in result.admissions}
    assert decided.isdisjoint(result.verdicts)
    assert len(decided) + len(result.verdicts) == len(scenario.gangs)


@settings(max_examples=100, deadline=None)
@given(scenarios(), st.randoms(use_true_random=False))
def test_the_same_cluster_in_any_event_order_gives_the_same_result(
    scenario: Scenario, shuffler: random.Random
) -> None:
    objects = scenario.objects()
    first = schedule(cluster(*objects), now=NOW, config=CONFIG)
    shuffled = list(objects)
    shuffler.shuffle(shuffled)
    state = ClusterState()
    for obj in [*shuffled, *shuffled]:  # applied twice: re-applying must change nothing
        state.apply(obj["kind"], obj)
    assert schedule(state, now=NOW, config=CONFIG) == first


def brute_force_fits(scenario: Scenario) -> bool:
    """Whether some assignment places at least minCount pods of the only gang."""
    ((_, shapes, min_count, zoned, _),) = scenario.gangs
    free = {name: [cpu, gpu] for name, cpu, gpu, _ in scenario.nodes}
    for _, on, cpu, gpu, _ in scenario.bound:
        free[on][0] -= cpu
        free[on][1] -= gpu
    zones = {name: zone for name, _, _, zone in scenario.nodes}
    choices: list[str | None] = [None, *free]
    for assignment in itertools.product(choices, repeat=len(shapes)):
        placed = [(on, SHAPES[shape]) for on, shape in zip(assignment, shapes, strict=True) if on]
        if len(placed) < min_count:
            continue
        if zoned and (len({zones[on] for on, _ in placed}) != 1 or zones[placed[0][0]] is None):
            continue
        used: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for on, (cpu, gpu) in placed:
            used[on][0] += cpu
            used[on][1] += gpu
        if all(used[on][0] <= free[on][0] and used[on][1] <= free[on][1] for on in used):
            return True
    return False


# Of the 200 examples, how many must have a fit for the property to have been tested
# (about 90 to 105 do, in the CI profile's fixed set and in random runs alike).
FITTING_EXAMPLES_FLOOR = 50


def engine_admits(scenario: Scenario) -> bool:
    return bool(schedule(cluster(*scenario.objects()), now=NOW, config=CONFIG).admissions)


def test_single_shape_gangs_fit_whenever_brute_force_finds_a_way() -> None:
    """Only the examples that have a fit test anything, so they are counted: a
    generator that drifted to clusters where nothing fits would pass otherwise."""
    fits: list[Scenario] = []

    @settings(max_examples=200, deadline=None)
    @given(scenarios(max_gangs=1), st.integers(0, len(SHAPES) - 1))
    def admitted_if_it_fits(scenario: Scenario, shape: int) -> None:
        ((name, shapes, min_count, zoned, priority),) = scenario.gangs
        gang = (name, [shape] * len(shapes), min_count, zoned, priority)
        uniform = Scenario(scenario.nodes, scenario.bound, [gang])
        if brute_force_fits(uniform):
            fits.append(uniform)
            assert engine_admits(uniform)

    admitted_if_it_fits()
    assert len(fits) >= FITTING_EXAMPLES_FLOOR, f"only {len(fits)} examples had a fit"


def _random_scenario(rng: random.Random) -> Scenario:
    nodes = [
        (f"n{index}", rng.randint(1, 8), rng.randint(0, 4), rng.choice(["a", "b", None]))
        for index in range(rng.randint(2, 3))
    ]
    shapes = [rng.randrange(len(SHAPES)) for _ in range(rng.randint(3, 5))]
    gang = ("g0", shapes, len(shapes), rng.random() < 0.3, 0)
    return Scenario(nodes, [], [gang])


def test_mixed_shape_gap_is_small() -> None:
    """The greedy may miss placements of mixed-shape gangs; measure how often."""
    rng = random.Random(20261130)
    feasible = missed = 0
    for _ in range(300):
        scenario = _random_scenario(rng)
        if brute_force_fits(scenario):
            feasible += 1
            missed += not engine_admits(scenario)
    assert feasible > 100
    assert missed / feasible <= 0.01, f"missed {missed} of {feasible}"
