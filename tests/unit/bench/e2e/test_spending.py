from __future__ import annotations

from collections import Counter

from bench.common.audit import Call
from bench.e2e.spending import operator_figures, request_figures, webhook_calls, webhook_figures


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


SAMPLE = 'apiserver_admission_webhook_request_total{{code="{code}",name="{name}"}} {n}'
METRICS = "\n".join(
    (
        "# TYPE apiserver_admission_webhook_request_total counter",
        SAMPLE.format(code=200, name="gate-jobs.scheduling.muster.dev", n=3),
        SAMPLE.format(code=400, name="gate-jobs.scheduling.muster.dev", n=1),
        SAMPLE.format(code=200, name="mpod.kueue.x-k8s.io", n=7),
        "",
    )
)


def test_the_calls_of_muster_s_webhooks_are_counted_from_the_api_server_s_metrics() -> None:
    before = webhook_calls(METRICS)
    assert before == {"gate-jobs.scheduling.muster.dev": 4}
    after = before + Counter({"gate-jobs.scheduling.muster.dev": 6})
    assert webhook_figures(before, after, jobs=3) == {
        "by_webhook": {"gate-jobs.scheduling.muster.dev": 6},
        "per_job": 2.0,
    }
