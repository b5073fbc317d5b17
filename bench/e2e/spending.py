"""What a run asked of the control plane: API requests per bound pod, by client, and
the calls of Muster's webhooks.

Every client is named in the audit log by its User-Agent (bench/common/audit.py). The
benchmark's own requests (creating the burst, watching it) are counted apart, since
every mode makes the same ones; the operator is whichever client is none of the
others. The audit log does not show the API server's own calls of admission
webhooks; its metrics count them (`apiserver_admission_webhook_request_total`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from devtools.cluster.layout import KUEUE
from prometheus_client.parser import text_string_to_metric_families

from bench.common.apiclient import USER_AGENT
from bench.common.audit import Call, per_call, per_client
from bench.e2e import floor

OPERATOR = "muster"
WEBHOOKS = ".scheduling.muster.dev"  # how the name of every webhook of Muster's ends

# Clients in the audit log that are not the operator: the control plane, KWOK (the
# simulated kubelets), Kueue's manager, the floor client, kubectl (used only to set the
# cluster up) and the benchmark.
NOT_OPERATOR = frozenset(
    {
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
        KUEUE,
        floor.USER_AGENT,
        "kubectl",
        USER_AGENT,
    }
)


def request_figures(calls: Counter[Call], bound: int) -> dict[str, Any]:
    """Requests by client, in all and per bound pod (the benchmark's own left out)."""
    requests = per_client(calls)
    measured = {name: count for name, count in requests.most_common() if name != USER_AGENT}
    return {
        "by_client": dict(requests.most_common()),
        "per_bound_pod_by_client": {
            name: round(count / bound, 2) for name, count in measured.items()
        },
        "per_bound_pod_excluding_benchmark": round(sum(measured.values()) / bound, 2),
    }


def operator_figures(calls: Counter[Call], process: dict[str, float], bound: int) -> dict[str, Any]:
    """The operator's CPU, memory and requests, every kind of call counted."""
    requests = per_client(calls)
    clients = [name for name in requests if name not in NOT_OPERATOR]
    total = sum(requests[name] for name in clients)
    return {
        "cpu_seconds": process["cpu_seconds"],
        "peak_rss_mib": process["peak_rss_mib"],
        "api_requests": total,
        "api_requests_by_call": per_call(calls, clients),
        "api_requests_per_admitted_pod": round(total / bound, 2),
    }


def webhook_calls(metrics: str) -> Counter[str]:
    """The API server's calls of each of Muster's webhooks so far, from its /metrics."""
    calls: Counter[str] = Counter()
    for family in text_string_to_metric_families(metrics):
        if family.name != "apiserver_admission_webhook_request":
            continue
        for sample in family.samples:
            name = sample.labels.get("name", "")
            if sample.name.endswith("_total") and name.endswith(WEBHOOKS):
                calls[name] += int(sample.value)
    return calls


def webhook_figures(before: Counter[str], after: Counter[str], jobs: int) -> dict[str, Any]:
    """The calls of Muster's webhooks during the run, by webhook and per Job."""
    made = after - before
    return {
        "by_webhook": dict(sorted(made.items())),
        "per_job": round(sum(made.values()) / max(jobs, 1), 2),
    }
