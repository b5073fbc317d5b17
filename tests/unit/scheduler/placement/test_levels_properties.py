"""Preferred levels on random small three-level clusters, against a brute force (hypothesis).

Clusters of zones, blocks in them, racks in those and nodes (one or two of each per
parent, label values unique), a gang of like pods preferring one rack, sometimes
required to stay in one zone. For pods of one shape, whether a domain takes the gang
is a sum over its nodes, so the brute force is exact: the narrowest level with a
domain that takes the gang. The engine must admit the gang there (in one domain of
that level, inside its required zone), and not admit it when no allowed set of nodes
takes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from tests.unit.scheduler.builders import Obj, cluster, gang, node

NOW = 1_798_761_600.0
ZONE, BLOCK, RACK = "zone", "block", "rack"
LEVELS = (ZONE, BLOCK, RACK)
CONFIG = EngineConfig(starvation_seconds=10**12, topology_levels=LEVELS)


@dataclass(frozen=True)
class Case:
    cpus: dict[str, int]  # node name -> cpu
    where: dict[str, dict[str, str]]  # node name -> level -> value
    size: int
    cpu: int
    required: str | None

    def objects(self) -> list[Obj]:
        nodes = [
            node(name, cpu=str(cpu), labels=self.where[name]) for name, cpu in self.cpus.items()
        ]
        return [
            *nodes,
            *gang(
                "g", self.size, cpu=str(self.cpu), preferred_key=RACK, topology_key=self.required
            ),
        ]

    def room(self, names: list[str]) -> int:
        return sum(self.cpus[name] // self.cpu for name in names)

    def domains(self, key: str) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for name in self.cpus:
            found.setdefault(self.where[name][key], []).append(name)
        return found

    def narrowest(self) -> str | None:
        """The narrowest level (up to the required one) with a domain that takes the gang."""
        for key in reversed(LEVELS):
            if any(self.room(names) >= self.size for names in self.domains(key).values()):
                return key
            if key == self.required:
                return None
        return "anywhere" if self.room(list(self.cpus)) >= self.size else None


def three_levels(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, dict[str, str]]]:
    """Up to 2 zones of 2 blocks of 2 racks of 2 nodes: each node's cpus and labels."""
    cpus: dict[str, int] = {}
    where: dict[str, dict[str, str]] = {}
    for zone in range(draw(st.integers(1, 2))):
        for block in range(draw(st.integers(1, 2))):
            for rack in range(draw(st.integers(1, 2))):
                for index in range(draw(st.integers(1, 2))):
                    name = f"n{zone}{block}{rack}{index}"
                    cpus[name] = draw(st.integers(1, 4))
                    where[name] = {
                        ZONE: f"z{zone}",
                        BLOCK: f"z{zone}b{block}",
                        RACK: f"z{zone}b{block}r{rack}",
                    }
    return cpus, where


@st.composite
def cases(draw: st.DrawFn) -> Case:
    cpus, where = three_levels(draw)
    return Case(
        cpus,
        where,
        size=draw(st.integers(1, 10)),
        cpu=draw(st.integers(1, 2)),
        required=draw(st.sampled_from([None, ZONE])),
    )


@settings(max_examples=300, deadline=None)
@given(cases())
def test_the_narrowest_feasible_level_is_found_and_never_outside_the_required_domain(
    case: Case,
) -> None:
    result = schedule(cluster(*case.objects()), now=NOW, config=CONFIG)
    expected = case.narrowest()
    admissions = [a for a in result.admissions if a.group == GroupKey("default", "g")]
    if expected is None:
        assert not admissions
        return
    (admission,) = admissions
    nodes = set(admission.placements.values())
    assert len(admission.placements) == case.size
    if case.required is not None:
        assert len({case.where[name][case.required] for name in nodes}) == 1
    if expected == "anywhere":
        assert admission.domain is None
        return
    assert admission.domain is not None
    key, value = admission.domain
    assert key == expected
    assert {case.where[name][key] for name in nodes} == {value}
    assert len(admission.passed_over) == LEVELS[::-1].index(key)
