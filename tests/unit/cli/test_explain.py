"""`muster explain` renders the engine's verdict on one gang as tables."""

from __future__ import annotations

from muster.cli.explain import render
from muster.scheduler.results import (
    Admission,
    CycleResult,
    DomainFit,
    Explanation,
    GroupKey,
    Reason,
    Shortage,
    Verdict,
)

KEY = GroupKey("ml", "train")


def test_a_waiting_gang_shows_fits_per_domain_shortages_and_queue_position() -> None:
    explanation = Explanation(
        nodes_total=12,
        nodes_feasible=4,
        shortages=(Shortage("Insufficient nvidia.com/gpu", 8),),
        needed=4,
        existing=4,
        best_fit=3,
        domains=(DomainFit("zone=a", 2), DomainFit("zone=b", 3)),
        queue_position=2,
    )
    verdict = Verdict(Reason.UNSCHEDULABLE, "0/12 nodes ...", explanation)
    text = render(KEY, {}, CycleResult(verdicts={KEY: verdict}))
    lines = text.splitlines()
    assert lines[0] == "PodGroup ml/train"
    assert "Status:   waiting (Unschedulable)" in lines
    assert "Queue:    position 2" in lines
    assert "Pods:     needs 4, 4 exist, at most 3 fit at once" in lines
    assert "zone=a  2" in lines and "zone=b  3" in lines
    assert "Insufficient nvidia.com/gpu  8" in lines


def test_a_gang_that_fits_now_lists_where_its_pods_would_go() -> None:
    result = CycleResult(admissions=(Admission(KEY, {"train-0": "gpu-1"}),))
    text = render(KEY, {}, result)
    assert "fits now" in text
    assert "train-0  gpu-1" in text.splitlines()


def test_an_admitted_gang_shows_its_recorded_plan() -> None:
    status = {
        "conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}],
        "plan": {"train-0": "gpu-1"},
    }
    text = render(KEY, status, CycleResult())
    assert "Status:   admitted (Scheduled)" in text
    assert "train-0  gpu-1" in text.splitlines()
