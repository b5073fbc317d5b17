"""Tunables of the decision engine, passed to every cycle (never read from globals)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """How the engine trades throughput against fairness.

    `starvation_seconds`: a gang pending longer than this (since its PodGroup was
    created, or since it was last preempted or rolled back) stops being overtaken by
    backfill. Until then smaller gangs behind it may
    use capacity it cannot use yet; after it, the nodes it needs are closed to them.

    `max_rollbacks`: after this many rollbacks in a row because kube-scheduler refused
    a released pod, a gang is not planned again until the node set changes (0: no
    limit). Each refusal already keeps the refused node out of its next plans; the
    limit stops a refusal kube-scheduler would make on every node from cycling the
    gang through all of them.

    `release_timeout`: seconds a released pod may stay unbound, from its release or
    kube-scheduler's last bind, whichever is later (see `follow`), before its gang
    is rolled back. `victims_timeout`: seconds a preemptor waits, from its
    admission, for its victims to leave before it is rolled back. `rollback_backoff`
    and `rollback_backoff_max`: a rolled-back gang is not admitted again for the first
    delay, doubled with each rollback in a row, up to the second.

    `orphan_grace`: seconds from a member pod's creation before the engine warns
    that its PodGroup does not exist. A Job's pods exist before the operator has
    made the Job's PodGroup, so warning at once would tell most pods of every new Job.

    `arrival_grace`: seconds from a gang's newest pod's creation during which more of
    its pods may still be on their way: a framework or a controller creates a gang's
    pods over seconds, and the first of them alone may not fit where the whole gang
    does. Meanwhile a gang that does not fit is told why as of the cluster now, never
    that it does not fit even on an empty cluster.

    `topology_levels`: node label keys of the cluster's topology, widest first (zone,
    block, rack, ...). A gang preferring one level falls back to the wider ones in
    this order (see `placement.levels`).

    `keep_verdicts`: a waiting gang refused in one cycle is not decided again while
    nothing its refusal read has changed; its verdict is kept (`cycle.memo`). Off, every
    waiting gang is decided in every cycle, with the same decisions, at a cost growing
    with the queue. `verdict_flush_seconds`: a kept verdict is decided afresh after this
    long all the same, kube-scheduler's safety net for its unschedulable pods (5 minutes).
    """

    starvation_seconds: float = 600.0
    max_rollbacks: int = 3
    release_timeout: float = 60.0
    victims_timeout: float = 300.0
    rollback_backoff: float = 10.0
    rollback_backoff_max: float = 300.0
    orphan_grace: float = 10.0
    arrival_grace: float = 10.0
    topology_levels: tuple[str, ...] = ()
    keep_verdicts: bool = True
    verdict_flush_seconds: float = 300.0

    def __post_init__(self) -> None:
        # A replayed trace gives a list (JSON has no tuples): keep the config hashable.
        object.__setattr__(self, "topology_levels", tuple(self.topology_levels))
        if self.starvation_seconds < 0:
            raise ValueError("starvation_seconds must not be negative")
        if self.max_rollbacks < 0:
            raise ValueError("max_rollbacks must not be negative")
        for name in (
            "release_timeout",
            "victims_timeout",
            "rollback_backoff",
            "orphan_grace",
            "arrival_grace",
            "verdict_flush_seconds",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
