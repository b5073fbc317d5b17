"""A gang's facts: its scarcest resource requested, its priority, how long it waited."""

from __future__ import annotations

from dataclasses import replace

from muster.api.keys import GroupKey
from muster.operator.dashboard.facts import NOTHING, allocatable_totals, demand_words, waited
from tests.unit.operator.dashboard.scene import NOW, scene

GPU = "nvidia.com/gpu"


def test_the_scarcest_resource_is_the_largest_share_of_what_the_nodes_allocate() -> None:
    totals = {"cpu": 64_000, "memory": 256 * 2**30, GPU: 16}
    assert demand_words({"cpu": 8_000, "memory": 2**30, GPU: 4}, totals) == f"4 {GPU}"
    assert demand_words({"cpu": 32_000, GPU: 1}, totals) == "32 cpu"
    assert demand_words({"cpu": 1_000, "example.com/fpga": 1}, totals) == "1 example.com/fpga"
    assert demand_words({"cpu": 0}, totals) == demand_words({}, totals) == NOTHING


def test_ties_go_to_the_first_name_so_every_board_says_the_same() -> None:
    assert demand_words({GPU: 2, "cpu": 2_000}, {GPU: 4, "cpu": 4_000}) == "2 cpu"


def test_the_cluster_s_totals_leave_out_the_pod_count() -> None:
    totals = allocatable_totals(scene())
    assert totals[GPU] == 12 and "pods" not in totals


def test_a_gang_waits_until_now_then_until_its_admission_from_its_latest_wait() -> None:
    record = scene().groups[GroupKey("default", "wait")]
    assert record.created is not None
    assert waited(record, NOW) == NOW - record.created
    admitted = replace(record, admitted=True, admitted_at=record.created + 90)
    assert waited(admitted, NOW) == 90.0
    taken_down = replace(admitted, waiting_since=record.created + 60)
    assert waited(taken_down, NOW) == 30.0  # since it was taken down, not since its creation
    assert waited(replace(admitted, admitted_at=None), NOW) is None
