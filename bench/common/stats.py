"""Figures of one benchmark run, from the Timeline it recorded.

Latencies are per Job: from the moment the API server acknowledged the Job's creation
to the moment the last of its pods was seen bound (or Running). Throughput is every
pod bound during the run, over the time from the first Job's submission to the last
bind.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from bench.common.timeline import Episodes, Timeline

QUANTILES = (50, 90, 99)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), interpolating between the two nearest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def distribution(values: Sequence[float]) -> dict[str, float | int | None]:
    """Count, p50/p90/p99, mean and max of ``values`` in seconds (None when empty)."""
    figures: dict[str, float | int | None] = {"count": len(values)}
    for q in QUANTILES:
        figures[f"p{q}"] = round(percentile(values, q), 3) if values else None
    figures["mean"] = round(sum(values) / len(values), 3) if values else None
    figures["max"] = round(max(values), 3) if values else None
    return figures


def summarize(timeline: Timeline, *, started_at: float, ended_at: float) -> dict[str, Any]:
    """The figures of one mode's run; ``started_at`` is when the burst began.

    Closes the timeline at ``ended_at``, so Jobs still partial count until then.
    """
    timeline.close(ended_at)
    to_bound: list[float] = []
    to_running: list[float] = []
    phases: dict[str, list[float]] = {
        "created_to_all_pods_exist_s": [],
        "created_to_gang_recorded_s": [],
        "pods_and_gang_exist_to_admitted_s": [],
        "admitted_to_all_bound_s": [],
        "created_to_kueue_admitted_s": [],
        "kueue_admitted_to_all_bound_s": [],
    }
    binds: list[float] = []
    for record in timeline.jobs.values():
        binds.extend(record.bound_at.values())
        if record.created_at is None:
            continue
        if (bound := record.all_bound_at) is not None:
            to_bound.append(bound - record.created_at)
        if (running := record.all_running_at) is not None:
            to_running.append(running - record.created_at)
        if (seen := record.all_seen_at) is not None:
            phases["created_to_all_pods_exist_s"].append(seen - record.created_at)
        if (recorded := record.group_seen_at) is not None:
            phases["created_to_gang_recorded_s"].append(recorded - record.created_at)
        if (admitted := record.admitted_at) is not None:
            if seen is not None and recorded is not None:
                ready = max(seen, recorded)
                phases["pods_and_gang_exist_to_admitted_s"].append(max(admitted - ready, 0.0))
            if bound is not None:
                phases["admitted_to_all_bound_s"].append(bound - admitted)
        if (queue_admitted := record.queue_admitted_at) is not None:
            phases["created_to_kueue_admitted_s"].append(queue_admitted - record.created_at)
            if bound is not None:
                phases["kueue_admitted_to_all_bound_s"].append(bound - queue_admitted)
    last_bind = max(binds, default=None)
    span = last_bind - started_at if last_bind is not None else None
    records = timeline.jobs.values()
    queued = any(record.queued_at is not None for record in records)
    return {
        "jobs": len(timeline.jobs),
        "pods": sum(record.size for record in records),
        "jobs_all_bound": len(to_bound),
        "jobs_all_running": len(to_running),
        "pods_bound": len(binds),
        "time_to_all_bound_s": distribution(to_bound),
        "time_to_all_running_s": distribution(to_running),
        # Where a Job's time goes; all but the first only where the benchmark sees the
        # gang scheduler's record of the gang (Muster's PodGroup).
        "phases": {name: distribution(values) for name, values in phases.items() if values},
        "last_bind_after_s": round(span, 3) if span is not None else None,
        "throughput_pods_bound_per_s": round(len(binds) / span, 2) if span else None,
        "measured_for_s": round(ended_at - started_at, 3),
        "partially_started_jobs": episodes(timeline.partial),
        **({"kueue": kueue_figures(timeline)} if queued else {}),
    }


def episodes(tracked: Episodes) -> dict[str, int | float]:
    """How many Jobs were in a state at most at once, ever, at the end, and for how long."""
    return {
        "max_at_once": tracked.max_at_once,
        "jobs_ever": len(tracked.ever),
        "at_end": len(tracked.now),
        "job_seconds": round(tracked.total_seconds(), 3),
    }


def kueue_figures(timeline: Timeline) -> dict[str, Any]:
    """What Kueue did with the Jobs: admitted, left queued, evicted, and admitted Jobs
    whose pods were refused a place (bench/common/timeline.py defines it)."""
    records = [record for record in timeline.jobs.values() if record.queued_at is not None]
    admitted = [record for record in records if record.queue_admitted]
    return {
        "workloads": len(records),
        "admitted_at_end": len(admitted),
        "admitted_with_topology_assignment": sum(record.topology_assigned for record in records),
        "queued_at_end": len(records) - len(admitted),
        "admitted_not_all_bound_at_end": sum(
            record.pods_bound_now < record.size for record in admitted
        ),
        "jobs_evicted": sum(bool(record.evictions) for record in records),
        "evictions": sum(sum(record.evictions.values()) for record in records),
        "evictions_by_reason": dict(
            sum((Counter(record.evictions) for record in records), Counter()).most_common()
        ),
        "admitted_but_unschedulable_jobs": {
            **episodes(timeline.admitted_unschedulable),
            "grace_s": timeline.admitted_unschedulable.grace,
        },
    }
