"""What a run asked of the control plane: API requests per bound pod, by client.

Every client is named in the audit log by its User-Agent (bench/audit.py). The
benchmark's own requests (creating the burst, watching it) are counted apart, since
every mode makes the same ones; the operator is whichever client is none of the
others.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hack.cluster import KUEUE

from bench import floor
from bench.apiclient import USER_AGENT
from bench.audit import Call, per_call, per_client

OPERATOR = "muster"

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
