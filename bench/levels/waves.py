"""The waves scenario of the preferred-levels benchmark: choices made on a cluster in use.

One burst on an empty cluster leaves little to choose: every gang fits its narrowest
level, and the tightest domain or the best fit end alike. Here the cluster churns
(`make_waves`): a first wave fills two thirds of the GPUs, half of its gangs (picked
by the seed) finish shortly after they start, which frees racks part-way in a pattern
the first placements made, and a second wave then asks for as much again, more than
is left, so some of it queues. What each system chose in the first wave shapes what
the second can get.

A gang is judged at the moment its pods are first seen all bound (`Moments`): the
narrowest level at which it could have sat is the narrowest one a domain of which
had room for it, every other gang's pods then bound, or already given their node
and not bound yet, staying where they were. A gang never bound is judged against
the cluster at the end.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bench.e2e.workload import GangJob
from bench.levels.shape import (
    JUDGED,
    NOT_BOUND,
    RACK_KEY,
    fragmentation,
    holding,
    judge,
    make_workload,
    narrowest_feasible,
    node_labels,
    placed_level,
)

# Long enough for the whole first wave to be running before any of it finishes.
SHORT_HOLD = "40s"
SHORT_SHARE = 0.5
FIRST_ROUNDS = 2  # 67% of the default Shape's GPUs
SECOND_ROUNDS = 2  # as much again: about 100% with what is left of the first


@dataclass(frozen=True, slots=True)
class Waves:
    """The Jobs of both waves; the first wave's short ones finish after SHORT_HOLD."""

    first: list[GangJob]
    second: list[GangJob]

    @property
    def jobs(self) -> list[GangJob]:
        return self.first + self.second

    @property
    def short(self) -> list[str]:
        return [job.name for job in self.first if job.hold == SHORT_HOLD]

    @property
    def demand_after_churn(self) -> int:
        """GPUs asked for once the short gangs have finished and the second wave is in."""
        return sum(job.gpus for job in self.jobs if job.hold != SHORT_HOLD)


def make_waves(
    *, seed: int, first_rounds: int = FIRST_ROUNDS, second_rounds: int = SECOND_ROUNDS
) -> Waves:
    """Both waves from ``seed``, the same for every system: each its own order of the
    gang mix, and SHORT_SHARE of the first wave's gangs given SHORT_HOLD."""
    first = make_workload(rounds=first_rounds, seed=seed, prefix="first")
    short = set(random.Random(f"short-{seed}").sample(range(len(first)), k=len(first) // 2))
    return Waves(
        first=[replace(job, hold=SHORT_HOLD) if i in short else job for i, job in enumerate(first)],
        second=make_workload(rounds=second_rounds, seed=seed + 1000, prefix="second"),
    )


@dataclass(frozen=True, slots=True)
class Seen:
    """A gang at the moment its pods were first seen all bound."""

    at: float
    placed: str
    feasible: str
    domain: str
    racks: int  # how many racks its pods span


@dataclass(slots=True)
class Moments:
    """Each gang's place and the place it could have had, judged when first seen bound."""

    jobs: Sequence[GangJob]
    nodes: Sequence[Mapping[str, Any]]
    seen: dict[str, Seen] = field(default_factory=dict)

    def observe(self, pods: Iterable[Mapping[str, Any]], at: float) -> list[str]:
        """Judge the gangs first seen all bound in this listing of the pods; their names."""
        labels = {node["metadata"]["name"]: node_labels(node) for node in self.nodes}
        used: Counter[str] = Counter()
        own: defaultdict[str, Counter[str]] = defaultdict(Counter)
        hosts: defaultdict[str, list[Mapping[str, str]]] = defaultdict(list)
        for held in holding(pods, pinned=True):
            used[held.node] += held.gpus
            own[held.job][held.node] += held.gpus
        for held in holding(pods):
            hosts[held.job].append(labels[held.node])
        new = []
        for job in self.jobs:
            if job.name in self.seen or len(hosts[job.name]) < job.size:
                continue
            placed = placed_level(job, hosts[job.name])
            domain = f"{placed}={hosts[job.name][0][placed]}" if placed in JUDGED else placed
            feasible = narrowest_feasible(job, self.nodes, used - own[job.name])
            racks = len({labels[RACK_KEY] for labels in hosts[job.name]})
            self.seen[job.name] = Seen(at, placed, feasible, domain, racks)
            new.append(job.name)
        return new

    def bound_after(self, created: Mapping[str, float]) -> list[float]:
        """Seconds from each created gang's creation to its pods seen all bound."""
        return [self.seen[name].at - at for name, at in created.items() if name in self.seen]

    def figures(self, pods: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """Every gang judged, and what the pods at the end leave free; a gang never
        bound is judged against the end, and those with a long hold not all bound at
        the end are waiting (none of them ever finishes)."""
        used: Counter[str] = Counter()
        live: Counter[str] = Counter()
        for held in holding(pods):
            used[held.node] += held.gpus
            live[held.job] += 1
        feasible = {
            job.name: self.seen[job.name].feasible
            if job.name in self.seen
            else narrowest_feasible(job, self.nodes, used)
            for job in self.jobs
        }
        placed = {
            job.name: self.seen[job.name].placed if job.name in self.seen else NOT_BOUND
            for job in self.jobs
        }
        figures = judge(feasible, placed)
        figures["waiting_at_end"] = sum(
            job.hold is None and live[job.name] < job.size for job in self.jobs
        )
        # The gangs bound wider than the room then allowed, to tell why from the logs.
        figures["wider_than_room"] = {
            name: f"in {placed[name]}, {feasible[name]} had room"
            for name in placed
            if name in self.seen and placed[name] != feasible[name]
        }
        # A rack comes free only when every gang in it is over: how many racks the
        # gangs wider than one rack span.
        wider = [seen.racks for seen in self.seen.values() if seen.placed != RACK_KEY]
        figures["racks_spanned_by_wider_gangs"] = {"gangs": len(wider), "racks": sum(wider)}
        figures["domains"] = {
            job.name: self.seen[job.name].domain if job.name in self.seen else NOT_BOUND
            for job in self.jobs
        }
        return figures | fragmentation(self.nodes, used)


def finished_jobs(jobs: Iterable[Mapping[str, Any]]) -> set[str]:
    """The Jobs the Job controller has marked Complete."""
    return {job["metadata"]["name"] for job in jobs if _true(job, "Complete")}


def finished_workloads(workloads: Iterable[Mapping[str, Any]]) -> set[str]:
    """The Jobs whose Kueue Workload is Finished: only then does Kueue count their
    quota and their place in its topology as free."""
    return {
        owner["name"]
        for workload in workloads
        if _true(workload, "Finished")
        for owner in workload["metadata"].get("ownerReferences") or []
        if owner.get("kind") == "Job"
    }


def _true(body: Mapping[str, Any], condition: str) -> bool:
    return any(
        item.get("type") == condition and item.get("status") == "True"
        for item in (body.get("status") or {}).get("conditions") or []
    )


def in_use(pods: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """GPUs held on each node by pods bound and not finished."""
    used: Counter[str] = Counter()
    for held in holding(pods):
        used[held.node] += held.gpus
    return dict(used)
