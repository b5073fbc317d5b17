"""Preemption with PodDisruptionBudgets against an exhaustive search on tiny clusters.

Each bound pod is protected or not by one budget that allows nothing (so a protected
pod violates it alone, and the exhaustive count is the engine's). Budgets never keep
a gang from preempting; when a victim set that violates nothing exists, the engine
takes one, with the lowest possible highest victim priority among such sets.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.scheduler import schedule
from muster.scheduler.decisions.results import Admission
from tests.unit.scheduler.builders import Obj, budget, cluster
from tests.unit.scheduler.placement.test_preemption_properties import (
    CONFIG,
    GANG_PRIORITY,
    NOW,
    Crowded,
    crowded,
)

PROTECTED = {"app": "db"}


@dataclass(frozen=True)
class Guarded:
    crowd: Crowded
    protected: tuple[bool, ...]  # per bound pod

    def objects(self) -> list[Obj]:
        objects = self.crowd.objects()
        for obj in objects:
            name = obj["metadata"]["name"]
            if obj["kind"] == "Pod" and name.startswith("v"):
                guarded = self.protected[int(name[1:])]
                obj["metadata"]["labels"] = PROTECTED if guarded else {"app": "web"}
        return [*objects, budget("db", PROTECTED, allowed=0)]

    def best(self, *, spare: bool) -> int | None:
        """The lowest highest victim priority of a victim set that makes room (among
        sets without protected pods when `spare`); -1 for no victims, None for none."""
        evictable = [
            number
            for number, (_, _, priority) in enumerate(self.crowd.bound)
            if priority < GANG_PRIORITY and not (spare and self.protected[number])
        ]
        best: int | None = None
        for size in range(len(evictable) + 1):
            for gone in itertools.combinations(evictable, size):
                if self.crowd.fits_without(set(gone)):
                    top = max((self.crowd.bound[n][2] for n in gone), default=-1)
                    best = top if best is None else min(best, top)
        return best


@st.composite
def guarded(draw: st.DrawFn) -> Guarded:
    crowd = draw(crowded())
    size = len(crowd.bound)
    flags = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    return Guarded(crowd, tuple(flags))


def decide(scenario: Guarded) -> Admission | None:
    result = schedule(cluster(*scenario.objects()), now=NOW, config=CONFIG)
    return result.admissions[0] if result.admissions else None


@settings(max_examples=300, deadline=None)
@given(guarded())
def test_budgets_steer_the_choice_but_never_block_it(scenario: Guarded) -> None:
    anyhow, sparing = scenario.best(spare=False), scenario.best(spare=True)
    admission = decide(scenario)
    assert (admission is None) == (anyhow is None)
    if admission is None:
        return
    top = max((victim.priority for victim in admission.victims), default=-1)
    if sparing is not None:
        assert not admission.violations, "a victim set violating nothing existed"
        assert top == sparing
    else:
        assert admission.violations
        assert top == anyhow
        broken = admission.violations.pods
        assert all(victim.must_go for victim in admission.victims if victim.pod in broken)
