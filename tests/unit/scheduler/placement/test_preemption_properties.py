"""Preemption against an exhaustive search on tiny clusters.

The lowest possible highest-victim priority is found exactly (for gangs of one shape);
the number of victims is minimised greedily, and the gap to the true minimum is
measured in `test_victim_count_gap_is_small`.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import Admission
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12)
GANG_PRIORITY = 3


@dataclass(frozen=True)
class Crowded:
    nodes: list[int]  # cpu cores per node
    bound: list[tuple[int, int, int]]  # node index, cores, priority
    gang_pods: int
    gang_cores: int

    def objects(self) -> list[Obj]:
        objects = [node(f"n{index}", cpu=str(cores)) for index, cores in enumerate(self.nodes)]
        objects += [
            pod(f"v{number}", cpu=str(cores), node_name=f"n{on}", priority=priority)
            for number, (on, cores, priority) in enumerate(self.bound)
        ]
        objects += gang("g", self.gang_pods, cpu=str(self.gang_cores), priority=GANG_PRIORITY)
        return objects

    def fits_without(self, gone: set[int]) -> bool:
        free = list(self.nodes)
        for number, (on, cores, _) in enumerate(self.bound):
            if number not in gone:
                free[on] -= cores
        return sum(room // self.gang_cores for room in free if room > 0) >= self.gang_pods

    def cheapest(self) -> tuple[int, int] | None:
        """(highest victim priority, victims) of the best victim set; (-1, 0) for none."""
        evictable = [n for n, (_, _, prio) in enumerate(self.bound) if prio < GANG_PRIORITY]
        best: tuple[int, int] | None = None
        for size in range(len(evictable) + 1):
            for gone in itertools.combinations(evictable, size):
                if self.fits_without(set(gone)):
                    cost = (max((self.bound[n][2] for n in gone), default=-1), size)
                    best = cost if best is None or cost < best else best
        return best


@st.composite
def crowded(draw: st.DrawFn) -> Crowded:
    nodes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=3))
    bound = []
    for index, cores in enumerate(nodes):
        left = cores
        for _ in range(draw(st.integers(0, 3))):
            used = draw(st.integers(0, left))
            left -= used
            bound.append((index, used, draw(st.integers(0, GANG_PRIORITY))))
    return Crowded(nodes, bound, draw(st.integers(1, 3)), draw(st.integers(1, 4)))


def decide(scenario: Crowded) -> Admission | None:
    result = schedule(cluster(*scenario.objects()), now=NOW, config=CONFIG)
    return result.admissions[0] if result.admissions else None


def cost_of(admission: Admission) -> tuple[int, int]:
    return (max((v.priority for v in admission.victims), default=-1), len(admission.victims))


@settings(max_examples=200, deadline=None)
@given(crowded())
def test_the_highest_victim_priority_is_the_lowest_possible(scenario: Crowded) -> None:
    optimum = scenario.cheapest()
    admission = decide(scenario)
    if optimum is None:
        assert admission is None
        return
    assert admission is not None
    assert cost_of(admission)[0] == optimum[0]
    assert all(victim.priority < GANG_PRIORITY for victim in admission.victims)


def test_victim_count_gap_is_small() -> None:
    rng = random.Random(1130)
    preempting = extra = 0
    for _ in range(400):
        nodes = [rng.randint(1, 6) for _ in range(rng.randint(1, 3))]
        bound = []
        for index, cores in enumerate(nodes):
            left = cores
            for _ in range(rng.randint(0, 3)):
                used = rng.randint(0, left)
                left -= used
                bound.append((index, used, rng.randint(0, GANG_PRIORITY)))
        scenario = Crowded(nodes, bound, rng.randint(1, 3), rng.randint(1, 4))
        optimum = scenario.cheapest()
        if optimum is None or optimum[1] == 0:
            continue
        admission = decide(scenario)
        assert admission is not None
        preempting += 1
        extra += cost_of(admission)[1] > optimum[1]
    assert preempting > 50
    assert extra / preempting <= 0.02, f"{extra} of {preempting} took more victims than needed"
