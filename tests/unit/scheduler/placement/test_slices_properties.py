"""Slices on random small three-level clusters, against a brute force (hypothesis).

Clusters of zones, blocks in them, racks in those and nodes (one or two of each per
parent, label values unique); a gang of like pods cut into slices of k per rack or
per block, sometimes preferring one rack or one block, sometimes required to stay
in one zone. For pods of one shape a domain holds the gang's slices exactly when
the slice domains inside it hold floor(room / k) slices enough between them, so
the brute force is exact: the narrowest step of the gang's ladder with such a
domain. The engine must admit the gang there, every slice whole in one slice
domain, and not admit it when no step has one; pods that must be alone on their
node (anti-affinity to themselves by hostname, half the cases) count one per node.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from tests.unit.scheduler.builders import Obj, cluster, gang, node
from tests.unit.scheduler.placement.test_levels_properties import three_levels

NOW = 1_798_761_600.0
ZONE, BLOCK, RACK = "zone", "block", "rack"
HOSTNAME = "kubernetes.io/hostname"
LEVELS = (ZONE, BLOCK, RACK)
CONFIG = EngineConfig(starvation_seconds=10**12, topology_levels=LEVELS)
ANYWHERE = "anywhere"
ALONE = {
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "g"}}, "topologyKey": HOSTNAME}
            ]
        }
    }
}


@dataclass(frozen=True)
class Case:
    cpus: dict[str, int]  # node name -> cpu
    where: dict[str, dict[str, str]]  # node name -> level -> value
    size: int
    cpu: int
    slice_key: str
    slice_size: int
    preferred: str | None
    required: str | None
    alone: bool = False  # one pod per node (anti-affinity to itself by hostname)

    def objects(self) -> list[Obj]:
        nodes = [
            node(name, cpu=str(cpu), labels=self.where[name]) for name, cpu in self.cpus.items()
        ]
        members = gang(
            "g",
            self.size,
            cpu=str(self.cpu),
            preferred_key=self.preferred,
            topology_key=self.required,
            slicing=(self.slice_key, self.slice_size),
            labels={"app": "g"},
            spec=ALONE if self.alone else None,
        )
        return [*nodes, *members]

    def copies(self, name: str) -> int:
        copies = self.cpus[name] // self.cpu
        return min(copies, 1) if self.alone else copies

    def holds(self, names: list[str]) -> bool:
        """Whether these nodes hold the gang's slices, each in one slice domain."""
        room: dict[str, int] = {}
        for name in names:
            value = self.where[name][self.slice_key]
            room[value] = room.get(value, 0) + self.copies(name)
        return sum(count // self.slice_size for count in room.values()) >= (
            self.size // self.slice_size
        )

    def domains(self, key: str) -> list[list[str]]:
        found: dict[str, list[str]] = {}
        for name in self.cpus:
            found.setdefault(self.where[name][key], []).append(name)
        return list(found.values())

    def steps(self) -> list[str]:
        """The gang's ladder: its preferred level up to its required one, then that."""
        if self.preferred is None:
            return [self.required or ANYWHERE]
        wider = list(reversed(LEVELS[: LEVELS.index(self.preferred) + 1]))
        if self.required is not None:
            return wider[: wider.index(self.required) + 1]
        return [*wider, ANYWHERE]

    def narrowest(self) -> str | None:
        for step in self.steps():
            domains = [list(self.cpus)] if step == ANYWHERE else self.domains(step)
            if any(self.holds(names) for names in domains):
                return step
        return None


@st.composite
def cases(draw: st.DrawFn) -> Case:
    cpus, where = three_levels(draw)
    slice_size = draw(st.integers(1, 4))
    preferred = draw(st.sampled_from([None, BLOCK, RACK]))
    slice_key = RACK if preferred == RACK else draw(st.sampled_from([BLOCK, RACK]))
    return Case(
        cpus,
        where,
        size=slice_size * draw(st.integers(1, 10 // slice_size)),
        cpu=draw(st.integers(1, 2)),
        slice_key=slice_key,
        slice_size=slice_size,
        preferred=preferred,
        required=draw(st.sampled_from([None, ZONE])),
        alone=draw(st.booleans()),
    )


@settings(max_examples=400, deadline=None)
@given(cases())
def test_slices_hold_whenever_a_placement_exists_at_the_narrowest_step(case: Case) -> None:
    result = schedule(cluster(*case.objects()), now=NOW, config=CONFIG)
    expected = case.narrowest()
    admissions = [a for a in result.admissions if a.group == GroupKey("default", "g")]
    if expected is None:
        assert not admissions
        return
    (admission,) = admissions
    assert len(admission.placements) == case.size
    ranked = sorted(admission.placements)  # g-0 .. g-9: name order is index order
    for first in range(0, case.size, case.slice_size):
        nodes = [admission.placements[name] for name in ranked[first : first + case.slice_size]]
        assert len({case.where[name][case.slice_key] for name in nodes}) == 1
    nodes_used = set(admission.placements.values())
    if case.alone:
        assert len(nodes_used) == case.size
    if case.required is not None:
        assert len({case.where[name][case.required] for name in nodes_used}) == 1
    if expected == ANYWHERE:
        assert admission.domain is None
        return
    assert admission.domain is not None
    key, value = admission.domain
    assert key == expected
    assert {case.where[name][key] for name in nodes_used} == {value}
