from __future__ import annotations

from collections import Counter

from bench.audit import Call
from bench.spending import operator_figures, request_figures


def calls() -> Counter[Call]:
    return Counter(
        {
            Call("muster", "patch", "pods"): 4,
            Call("muster", "create", "events"): 2,
            Call("kube-scheduler", "create", "pods/binding"): 4,
            Call("muster-bench", "create", "jobs"): 1,
        }
    )


def test_requests_per_bound_pod_leave_the_benchmark_out() -> None:
    figures = request_figures(calls(), bound=4)
    assert figures["by_client"]["muster-bench"] == 1
    assert figures["per_bound_pod_by_client"] == {"muster": 1.5, "kube-scheduler": 1.0}
    assert figures["per_bound_pod_excluding_benchmark"] == 2.5


def test_the_operator_is_the_client_no_other_component_is() -> None:
    figures = operator_figures(calls(), {"cpu_seconds": 1.0, "peak_rss_mib": 90.0}, bound=4)
    assert figures["api_requests"] == 6
    assert figures["api_requests_by_call"] == {"patch pods": 4, "create events": 2}
    assert figures["api_requests_per_admitted_pod"] == 1.5
