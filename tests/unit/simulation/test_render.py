from __future__ import annotations

import json

from muster.api.keys import GroupKey, PodKey
from muster.simulation.render import render_table, report_to_json
from muster.simulation.report import GroupOutcome, PreemptedPod, Report

ADMITTED = GroupOutcome(
    GroupKey("default", "train"),
    scheduled=True,
    reason="Scheduled",
    message="2/2 pods placed",
    placements={"train-1": "gpu-2", "train-0": "gpu-1"},
    preempted=False,
)
WAITING = GroupOutcome(
    GroupKey("ml-research", "sweep"),
    scheduled=False,
    reason="Preempted",
    message="preempted by PodGroup default/train to make room for its gang",
    placements={},
    preempted=True,
)
REPORT = Report(
    pod_groups=(ADMITTED, WAITING),
    victims=(
        PreemptedPod(PodKey("ml-research", "sweep-0"), GroupKey("ml-research", "sweep")),
        PreemptedPod(PodKey("default", "notebook"), None),
    ),
    warnings=(),
    cycles=2,
)


def test_json_follows_the_command_line_contract() -> None:
    assert report_to_json(REPORT) == {
        "podGroups": [
            {
                "namespace": "default",
                "name": "train",
                "scheduled": True,
                "reason": "Scheduled",
                "message": "2/2 pods placed",
                "placements": {"train-0": "gpu-1", "train-1": "gpu-2"},
                "preempted": False,
            },
            {
                "namespace": "ml-research",
                "name": "sweep",
                "scheduled": False,
                "reason": "Preempted",
                "message": "preempted by PodGroup default/train to make room for its gang",
                "placements": {},
                "preempted": True,
            },
        ],
        "victims": [
            {"namespace": "ml-research", "name": "sweep-0", "podGroup": "sweep"},
            {"namespace": "default", "name": "notebook", "podGroup": None},
        ],
    }


def test_json_placements_are_sorted_by_pod() -> None:
    text = json.dumps(report_to_json(REPORT))
    assert text.index('"train-0"') < text.index('"train-1"')


def test_table_has_one_aligned_row_per_pod_group_then_the_victims() -> None:
    assert render_table(REPORT).splitlines() == [
        "NAMESPACE     PODGROUP   SCHEDULED   REASON      PLACED   MESSAGE",
        "default       train      True        Scheduled   2        2/2 pods placed",
        "ml-research   sweep      False       Preempted   0        "
        "preempted by PodGroup default/train to make room for its gang",
        "",
        "Preempted pods:",
        "NAMESPACE     POD        PODGROUP",
        "ml-research   sweep-0    sweep",
        "default       notebook   <none>",
    ]


def test_table_without_victims_has_no_victim_section() -> None:
    report = Report(pod_groups=(ADMITTED,), victims=(), warnings=(), cycles=1)
    assert "Preempted pods" not in render_table(report)


def test_table_says_so_when_there_is_no_pod_group() -> None:
    report = Report(pod_groups=(), victims=(), warnings=(), cycles=1)
    assert render_table(report) == "No PodGroups in the input.\n"
