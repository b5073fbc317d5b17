"""A forecast in words, for status.estimate.waitingFor and `muster explain`."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.scheduler.decisions.results import Explanation, Reason, Shortfall, Verdict
from muster.scheduler.forecast.estimate_words import starts_in, waiting_for
from muster.scheduler.forecast.forecast import Estimate, Outcome, Vacancy
from muster.scheduler.memory.runtimes import Basis, Runtime

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
ZONE = "topology.kubernetes.io/zone"
GROUP = GroupKey("ml", "train-b")


def _verdict() -> Verdict:
    explanation = Explanation(
        nodes_total=4,
        nodes_feasible=0,
        shortages=(),
        needed=4,
        existing=4,
        best_fit=0,
        domains=(),
        queue_position=1,
        shortfalls=(Shortfall("nvidia.com/gpu", 4, 0),),
    )
    return Verdict(Reason.UNSCHEDULABLE, "", explanation)


def test_a_start_names_the_domain_the_time_and_whose_end_frees_it() -> None:
    estimate = Estimate(
        GROUP,
        Outcome.STARTS,
        start=T0 + 10 * 3600 + 42 * 60,
        basis=Basis.DECLARED,
        vacancies=(Vacancy("ml/train-a", T0 + 38520, Runtime(7200, Basis.DECLARED)),),
        domain=(ZONE, "zone-a"),
    )
    assert waiting_for(estimate, _verdict(), ZONE) == (
        "needs 4 nvidia.com/gpu in one topology.kubernetes.io/zone; "
        "topology.kubernetes.io/zone=zone-a frees them at ~10:42 UTC when ml/train-a ends "
        "(expected runtime 2h, declared)"
    )


def test_no_time_says_why_and_names_the_pods_of_unknown_runtime() -> None:
    estimate = Estimate(
        GROUP,
        Outcome.UNKNOWN,
        unknown=("ml/a", "ml/b", "ml/c", "ml/d"),
        why="it waits on capacity taken by pods of unknown runtime",
    )
    assert waiting_for(estimate, None, None) == (
        "it waits on capacity taken by pods of unknown runtime: ml/a, ml/b, ml/c and 1 more"
    )


def test_the_start_column() -> None:
    horizon = T0 + 86400
    starts = Estimate(GROUP, Outcome.STARTS, start=T0 + 720)
    assert starts_in(starts, T0, horizon) == "~12m"
    assert starts_in(Estimate(GROUP, Outcome.STARTS, start=T0), T0, horizon) == "now"
    assert starts_in(Estimate(GROUP, Outcome.BEYOND_HORIZON), T0, horizon) == ">24h"
    assert starts_in(Estimate(GROUP, Outcome.UNKNOWN), T0, horizon) == "unknown"
