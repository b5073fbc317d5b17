"""Capacity per domain: bound pods occupy, unbound members of a plan reserve."""

from __future__ import annotations

from muster.operator.dashboard.domains import Fill, domains, watched_resources
from tests.unit.operator.dashboard.scene import ZONE, scene


def test_each_zone_counts_occupied_reserved_and_free_gpus_and_cpu() -> None:
    state = scene()
    found = {(d.level, d.value): d for d in domains(state, (ZONE,))}
    assert set(found) == {(ZONE, "a"), (ZONE, "b")}
    gpu_a = found[ZONE, "a"].fills[0]
    assert gpu_a == Fill("nvidia.com/gpu", occupied=4, reserved=4, allocatable=8)
    assert gpu_a.free == 0
    assert found[ZONE, "b"].fills[0].free == 4
    cpu_a = found[ZONE, "a"].fills[1]
    assert (cpu_a.resource, cpu_a.occupied, cpu_a.reserved, cpu_a.allocatable) == (
        "cpu",
        1000,
        1000,
        16000,
    )


def test_the_words_say_what_the_picture_shows() -> None:
    fill = Fill("cpu", occupied=1500, reserved=500, allocatable=8000)
    assert fill.words() == "1.5 occupied, 0.5 reserved, 6 free of 8 cpu"


def test_nodes_without_the_label_belong_to_no_domain_and_gpus_come_first() -> None:
    state = scene()
    assert domains(state, ("rack",)) == ()
    assert watched_resources(state) == ("nvidia.com/gpu", "cpu")
