"""The seeded schedule of a soak: which gang Jobs arrive when, and which faults strike when.

Pure: the same seed and duration give the same schedule, so a violation found at a
moment of a run can be replayed with its seed. Jobs arrive as a Poisson stream; faults
at steadier gaps, each drawn from the catalogue, so that a fault often strikes while another lasts,
but never more than MOST_AT_ONCE at once (one due while two last waits for the first
of them to end), and never one of a kind that still lasts (a second SIGSTOP of KWOK
would be undone by the first one's SIGCONT). Nothing is scheduled in the last
`QUIET_SECONDS`, so the run ends with the cluster left to settle.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# The catalogue of faults, by kind; `hack/soak/faults.py` knows how to cause each one.
FAULT_KINDS = (
    "replica-sigkill",
    "replica-sigterm",
    "replica-sigstop",
    "kube-apiserver-restart",
    "etcd-restart",
    "kube-scheduler-restart",
    "kube-controller-manager-restart",
    "nodes-silent",
    "node-deleted",
    "member-deleted",
    "webhook-outage",
    "proxy-cut",
    "proxy-slow",
    "apf-throttled",
)
# How long a fault that lasts lasts, in seconds (from, to); the rest are instants.
DURATIONS = {
    "replica-sigstop": (20.0, 30.0),  # past the Lease (15 s)
    "nodes-silent": (35.0, 50.0),  # past the node monitor grace (soak clusters: 20 s)
    "webhook-outage": (5.0, 15.0),
    "proxy-cut": (3.0, 12.0),
    "proxy-slow": (10.0, 25.0),
    "node-deleted": (10.0, 30.0),  # before it is created again
    "apf-throttled": (10.0, 25.0),
}
# A Job asks on average 3.75 pods x 4/3 GPUs x 37.5 s = 187.5 GPU-seconds; one every
# 15 s offers 12.5 of the pool's 32 GPUs, some 40%: room for the faults' stalls, the
# preemptions' lost work and the zone-wide gangs, so that a Job is lost only when
# something is wrong. (One every 8 s offered 73%, and Jobs were lost to the queue alone.)
JOB_EVERY_SECONDS = 15.0
FAULT_EVERY_SECONDS = 20.0
MOST_AT_ONCE = 2
QUIET_SECONDS = 60.0
WARMUP_SECONDS = 20.0
PRIORITIES = ("soak-low", "soak-high")
HIGH_CHANCE = 0.2
TOPOLOGY_CHANCE = 0.3
DECLARED_RUNTIME_CHANCE = 0.5


@dataclass(frozen=True)
class JobPlan:
    """One gang Job: `workers` pods of `gpus` GPUs each, running `runtime` seconds."""

    name: str
    at: float  # seconds after the start
    workers: int
    gpus: int
    priority: str
    runtime: int
    topology: bool  # one zone for the whole gang
    declared_runtime: bool  # carries the expected-runtime annotation


@dataclass(frozen=True)
class FaultPlan:
    at: float  # seconds after the start
    kind: str
    lasts: float  # 0 for an instant fault


@dataclass(frozen=True)
class Schedule:
    seed: int
    duration: float
    kinds: tuple[str, ...]  # the kinds faults were drawn from
    fault_every: float
    jobs: tuple[JobPlan, ...]
    faults: tuple[FaultPlan, ...]


def schedule(
    seed: int,
    duration: float,
    kinds: tuple[str, ...] = FAULT_KINDS,
    fault_every: float = FAULT_EVERY_SECONDS,
) -> Schedule:
    """The whole run's arrivals, decided before it starts; a fault every `fault_every`
    seconds on average, each gap drawn between half and one and a half of it (so the
    count of a run varies little)."""
    rng = random.Random(seed)
    end = duration - QUIET_SECONDS
    jobs: list[JobPlan] = []
    at = rng.expovariate(1 / JOB_EVERY_SECONDS)
    while at < end:
        jobs.append(_job(rng, len(jobs), at))
        at += rng.expovariate(1 / JOB_EVERY_SECONDS)
    faults: list[FaultPlan] = []
    at = WARMUP_SECONDS + rng.uniform(0.0, fault_every)
    while at < end:
        lasting = [f for f in faults if f.at + f.lasts > at]
        if len(lasting) >= MOST_AT_ONCE:  # two already last: this one waits for the first end
            at = min(f.at + f.lasts for f in lasting)
            continue
        free = tuple(k for k in kinds if k not in {f.kind for f in lasting}) or kinds
        faults.append(_fault(rng, round(at, 2), free))
        at += fault_every * rng.uniform(0.5, 1.5)
    return Schedule(seed, duration, kinds, fault_every, tuple(jobs), tuple(faults))


def _job(rng: random.Random, index: int, at: float) -> JobPlan:
    high = rng.random() < HIGH_CHANCE
    return JobPlan(
        name=f"soak-{index:04d}",
        at=round(at, 2),
        workers=rng.choice((1, 2, 2, 3, 4, 4, 6, 8)),
        gpus=rng.choice((1, 1, 2)),
        priority=PRIORITIES[high],
        runtime=rng.randint(15, 60),
        topology=rng.random() < TOPOLOGY_CHANCE,
        declared_runtime=rng.random() < DECLARED_RUNTIME_CHANCE,
    )


def _fault(rng: random.Random, at: float, kinds: tuple[str, ...]) -> FaultPlan:
    kind = rng.choice(kinds)
    low, high = DURATIONS.get(kind, (0.0, 0.0))
    return FaultPlan(at, kind, round(rng.uniform(low, high), 1))
