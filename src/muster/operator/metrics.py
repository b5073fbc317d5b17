"""The operator's Prometheus metrics: one registry, names prefixed `muster_`.

A registry of our own (not the process-wide default) so that tests can build an
operator twice in one process without duplicate-metric errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
_CYCLE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        registry = self.registry
        self.pending_gangs = Gauge(
            "muster_pending_gangs", "Gangs waiting to be admitted", registry=registry
        )
        self.time_to_admit = Histogram(
            "muster_time_to_admit_seconds",
            "From the creation of a gang's last member pod to its admission",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.cycle_duration = Histogram(
            "muster_cycle_duration_seconds",
            "Time the decision engine takes for one scheduling cycle",
            buckets=_CYCLE_BUCKETS,
            registry=registry,
        )
        self.releases = Counter(
            "muster_pods_released_total", "Pods ungated and pinned to their node", registry=registry
        )
        self.admissions = Counter(
            "muster_gangs_admitted_total", "Gangs admitted", registry=registry
        )
        self.rollbacks = Counter(
            "muster_rollbacks_total", "Gangs rolled back after failing to bind", registry=registry
        )
        self.preemptions = Counter(
            "muster_preempted_pods_total", "Pods evicted to make room for a gang", registry=registry
        )
        self.webhook_resource_rescans = Counter(
            "muster_webhook_resource_rescans_total",
            "Scans of the API's discovery made again because a resource an admission "
            "handler serves was missing from it (the webhooks are not ready meanwhile)",
            registry=registry,
        )
        self.watch_expired = Counter(
            "muster_watch_expired_total",
            "Watches the API server ended with 410 Gone (resourceVersion too old), each "
            "followed by a relist",
            ["resource"],
            registry=registry,
        )
        self.watch_errors = Counter(
            "muster_watch_errors_total",
            "Lists and watches that failed and were retried after a backoff",
            ["resource"],
            registry=registry,
        )
        self.cached_pods = Gauge(
            "muster_cached_pods",
            "Pods the operator keeps: those that can take capacity (not Succeeded or "
            "Failed) and every gang member",
            registry=registry,
        )
        self.leader = Gauge(
            "muster_leader", "1 while this replica leads the scheduling loop", registry=registry
        )
