"""The placement search against a brute force, on random small clusters (hypothesis).

Nodes have cpu and a few GPUs published as devices (Dynamic Resource Allocation); a
gang's pods ask for cpu and, each, for nothing more, for a GPU of their own (a claim
made from a template), or for a claim shared with other pods of the gang (one or two
GPUs, allocated once, on one node, for all the pods that name it). The brute force
tries every assignment of the pods to nodes (some left out, when minCount is below the
gang's size); the engine must admit the gang exactly when one of them fits, and what
it admits must fit.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from tests.unit.scheduler.builders import Obj, cluster, node, pod, pod_group
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
CONFIG = EngineConfig(starvation_seconds=10**12)
SHARED = ("a", "b")  # the claims pods may share, by name
OWN = "own"  # a pod's claim of its own: one GPU
NO_CLAIM = "none"
LEFT_OUT = -1  # a pod placed nowhere (more than minCount exist)


@dataclass(frozen=True)
class Scenario:
    nodes: tuple[tuple[int, int], ...]  # per node: cpu, GPUs
    pods: tuple[tuple[int, str], ...]  # per pod: cpu, claim (NO_CLAIM, OWN or a shared one)
    shared_gpus: tuple[int, ...]  # per shared claim: the GPUs it asks for
    min_count: int

    def objects(self) -> list[Obj]:
        objects: list[Obj] = [device_class(), claim_template(OWN, request())]
        for index, (cpu, gpus) in enumerate(self.nodes):
            objects.append(node(f"n{index}", cpu=str(cpu)))
            if gpus:
                objects.append(resource_slice(f"n{index}", gpus))
        for name, gpus in zip(SHARED, self.shared_gpus, strict=True):
            objects.append(claim(name, request(count=gpus)))
        objects.append(pod_group("g", min_count=self.min_count))
        for index, (cpu, uses) in enumerate(self.pods):
            spec = None
            if uses == OWN:
                spec = from_template(OWN)
            elif uses != NO_CLAIM:
                spec = sharing(uses)
            objects.append(pod(f"g-{index}", group="g", cpu=str(cpu), spec=spec))
        return objects

    def fits(self, assignment: tuple[int, ...]) -> bool:
        """Whether minCount or more pods fit on these nodes (pod index -> node index,
        or `LEFT_OUT`)."""
        if sum(on != LEFT_OUT for on in assignment) < self.min_count:
            return False
        cpu = [0] * len(self.nodes)
        gpus = [0] * len(self.nodes)
        claim_node: dict[str, int] = {}
        for (pod_cpu, uses), on in zip(self.pods, assignment, strict=True):
            if on == LEFT_OUT:
                continue
            cpu[on] += pod_cpu
            if uses == OWN:
                gpus[on] += 1
            elif uses != NO_CLAIM and claim_node.setdefault(uses, on) != on:
                return False  # a claim's devices are on one node
        for name, on in claim_node.items():
            gpus[on] += self.shared_gpus[SHARED.index(name)]
        return all(
            cpu[i] <= node_cpu and gpus[i] <= node_gpus
            for i, (node_cpu, node_gpus) in enumerate(self.nodes)
        )

    def brute_force(self) -> bool:
        choices = itertools.product(range(-1, len(self.nodes)), repeat=len(self.pods))
        return any(self.fits(assignment) for assignment in choices)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    nodes = draw(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 3)), min_size=2, max_size=3))
    uses = st.sampled_from((NO_CLAIM, OWN, *SHARED))
    pods = draw(st.lists(st.tuples(st.integers(1, 2), uses), min_size=2, max_size=4))
    shared_gpus = draw(st.tuples(st.integers(1, 2), st.integers(1, 2)))
    min_count = draw(st.integers(1, len(pods)) | st.just(len(pods)))
    return Scenario(tuple(nodes), tuple(pods), shared_gpus, min_count)


# Of the 300 examples, how many must have a fit for the property to have been tested.
FITTING_EXAMPLES_FLOOR = 60
# And how many must share a claim among two or more pods that fit only off the node
# best fit would tie the claim to first (so that the search beyond it is tested).
SHARED_FITTING_FLOOR = 20


def test_a_gang_is_admitted_exactly_when_brute_force_finds_a_way() -> None:
    """Only the examples that have a fit show completeness, so they are counted: a
    generator that drifted to clusters where nothing fits would pass otherwise."""
    fitting: list[Scenario] = []
    shared: list[Scenario] = []

    @settings(max_examples=300, deadline=None)
    @given(scenarios())
    def admitted_iff_it_fits(scenario: Scenario) -> None:
        result = schedule(cluster(*scenario.objects()), now=NOW, config=CONFIG)
        placements = {
            pod_name: on
            for admission in result.admissions
            for pod_name, on in admission.placements.items()
        }
        exists = scenario.brute_force()
        assert bool(placements) == exists, (scenario, result.verdicts.get(GroupKey("default", "g")))
        if exists:
            fitting.append(scenario)
            assignment = tuple(
                int(placements[f"g-{index}"][1:]) if f"g-{index}" in placements else LEFT_OUT
                for index in range(len(scenario.pods))
            )
            assert scenario.fits(assignment), (scenario, placements)
            counts = [uses for _, uses in scenario.pods]
            if any(counts.count(name) > 1 for name in SHARED):
                shared.append(scenario)

    admitted_iff_it_fits()
    assert len(fitting) >= FITTING_EXAMPLES_FLOOR, len(fitting)
    assert len(shared) >= SHARED_FITTING_FLOOR, len(shared)
