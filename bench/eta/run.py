"""Start-time estimate accuracy: the estimate each gang got when it was submitted,
against the start the engine gave it later.

Pure engine, no cluster: a discrete-event run of the scheduling cycle over a
simulated GPU cluster. Gangs of mixed sizes, priorities and topology are submitted
(a burst that fills the cluster, then arrivals at random); at each submission the
forecast runs, exactly as the operator's estimate writer runs it, and the new gang's
estimate is kept. The run itself then goes on: at each submission and each pod end
the engine's cycles decide what starts, and pods run for their *actual* runtime,
which is the declared one, or off it by a factor (declared 30% too long or too short,
or noise of up to +-20% per gang). All gangs use `preemptionPolicy: Never`: a
forecast leaves preempted gangs out of its run, and this measures the rest.

Per scenario: for each gang that waited at least `MIN_WAIT` seconds, its error
(estimated start minus actual, positive when the estimate was late) relative to its
wait (actual start minus submission); p50 and p90 of the absolute relative error,
the median signed one, and the absolute error in seconds. Gangs that started on
submission, and those given no time, are counted apart. Writes bench/results/eta.json.

Run with `.venv/bin/python -m bench.eta`.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common.stats import percentile
from muster.api.constants import EXPECTED_RUNTIME_ANNOTATION, GANG_GATE, POD_GROUP_LABEL
from muster.api.keys import GroupKey
from muster.api.times import rfc3339
from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.decisions.results import NOTHING_CARRIED, Carried
from muster.scheduler.forecast.forecast import Outcome, forecast

RESULTS = Path(__file__).resolve().parents[1] / "results" / "eta.json"
T0 = 1_798_761_600  # a whole second: the API's times have whole seconds
NODES = 16
GPUS_PER_NODE = 8
ZONES = 4
ZONE = "topology.kubernetes.io/zone"
NAMESPACE = "eta"
BURST = 24  # gangs submitted at T0: the cluster is full, and a queue waits
ARRIVALS = 60
MEAN_GAP = 240  # seconds between arrivals after the burst (about the service rate)
MIN_WAIT = 60.0
SEEDS = (1, 2, 3)
BUCKETS = (
    "< -80%",
    "-80..-60",
    "-60..-40",
    "-40..-20",
    "-20..0",
    "0..20",
    "20..40",
    "40..60",
    "60..80",
    "> 80%",
)
CONFIG = EngineConfig()

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Gang:
    name: str
    size: int
    gpus: int  # per pod
    priority: int
    topology: bool
    declared: int  # seconds
    submitted: int


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    says: str
    arrivals: bool  # False: every gang submitted at T0 (the queue known in full)
    actual: Callable[[random.Random, int], float]  # declared seconds -> actual seconds
    priorities: bool = True  # False: every gang at priority 0 (none overtakes by it)


SCENARIOS = (
    Scenario("queue_known_runtimes_exact", "every gang submitted at once", False, lambda r, d: d),
    Scenario(
        "queue_known_noise_20",
        "every gang submitted at once; actual runtime declared +-20%",
        False,
        lambda r, d: d * r.uniform(0.8, 1.2),
    ),
    Scenario("arrivals_runtimes_exact", "a burst, then arrivals", True, lambda r, d: d),
    Scenario(
        "arrivals_one_priority_runtimes_exact",
        "a burst, then arrivals, all at one priority",
        True,
        lambda r, d: d,
        priorities=False,
    ),
    Scenario(
        "arrivals_noise_20",
        "a burst, then arrivals; actual runtime declared +-20%",
        True,
        lambda r, d: d * r.uniform(0.8, 1.2),
    ),
    Scenario(
        "arrivals_declared_30_too_long",
        "a burst, then arrivals; runtimes declared 30% longer than they are",
        True,
        lambda r, d: d / 1.3,
    ),
    Scenario(
        "arrivals_declared_30_too_short",
        "a burst, then arrivals; runtimes declared 30% shorter than they are",
        True,
        lambda r, d: d / 0.7,
    ),
)


def workload(seed: int, scenario: Scenario) -> list[Gang]:
    rng = random.Random(seed)
    gangs = []
    moment = T0
    for index in range(BURST + ARRIVALS):
        if scenario.arrivals and index >= BURST:
            moment += max(1, round(rng.expovariate(1 / MEAN_GAP)))
        gangs.append(
            Gang(
                name=f"g{index:03d}",
                size=rng.choice((2, 4, 4, 8, 8, 16)),
                gpus=rng.choice((1, 1, 2)),
                priority=rng.choices((0, 10, 100), weights=(6, 3, 1))[0] * scenario.priorities,
                topology=rng.random() < 0.3,
                declared=60 * rng.randint(10, 120),
                submitted=moment,
            )
        )
    return gangs


def node(index: int) -> Obj:
    name = f"gpu-{index:02d}"
    allocatable = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {
        "metadata": {"name": name, "labels": {ZONE: f"zone-{index % ZONES}"}},
        "spec": {},
        "status": {"allocatable": allocatable},
    }


def pod_group(gang: Gang, status: Obj | None = None) -> Obj:
    spec: Obj = {
        "schedulingPolicy": {"gang": {"minCount": gang.size}},
        "priority": gang.priority,
        "preemptionPolicy": "Never",
    }
    if gang.topology:
        spec["schedulingConstraints"] = {"topology": [{"key": ZONE}]}
    return {
        "metadata": {
            "name": gang.name,
            "namespace": NAMESPACE,
            "creationTimestamp": rfc3339(gang.submitted),
            "annotations": {EXPECTED_RUNTIME_ANNOTATION: f"{gang.declared}s"},
        },
        "spec": spec,
        "status": status or {},
    }


def member(gang: Gang, index: int, node_name: str | None = None, started: int = 0) -> Obj:
    requests = {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": str(gang.gpus)}
    spec: Obj = {
        "priority": gang.priority,
        "containers": [{"name": "main", "resources": {"requests": requests}}],
    }
    obj: Obj = {
        "metadata": {
            "name": f"{gang.name}-{index}",
            "namespace": NAMESPACE,
            "labels": {POD_GROUP_LABEL: gang.name},
        },
        "spec": spec,
    }
    if node_name is None:
        spec["schedulingGates"] = [{"name": GANG_GATE}]
    else:
        spec["nodeName"] = node_name
        obj["status"] = {"phase": "Running", "startTime": rfc3339(started)}
    return obj


@dataclass
class Run:
    """One scenario's run: the engine's cycles at each submission and pod end."""

    scenario: Scenario
    gangs: list[Gang]
    rng: random.Random
    state: ClusterState = field(default_factory=ClusterState)
    carried: Carried = NOTHING_CARRIED  # what the last cycle handed on
    ends: list[tuple[float, str]] = field(default_factory=list)  # (moment, gang)
    estimates: dict[str, float | None] = field(default_factory=dict)
    starts: dict[str, int] = field(default_factory=dict)
    forecast_seconds: list[float] = field(default_factory=list)

    def run(self) -> None:
        for index in range(NODES):
            assert self.state.apply("Node", node(index)).rejected is None
        by_name = {gang.name: gang for gang in self.gangs}
        queue = sorted(self.gangs, key=lambda gang: (gang.submitted, gang.name))
        while queue or self.ends:
            candidates = [queue[0].submitted] if queue else []
            if self.ends:
                candidates.append(int(self.ends[0][0]))
            moment = min(candidates)
            while self.ends and self.ends[0][0] <= moment:
                self._end(by_name[heapq.heappop(self.ends)[1]])
            arriving = []
            while queue and queue[0].submitted <= moment:
                arriving.append(queue.pop(0))
            for gang in arriving:
                self._submit(gang)
            if arriving:
                self._estimate(arriving, moment)
            self._settle(moment, by_name)

    def _submit(self, gang: Gang) -> None:
        assert self.state.apply("PodGroup", pod_group(gang)).rejected is None
        for index in range(gang.size):
            assert self.state.apply("Pod", member(gang, index)).rejected is None

    def _estimate(self, arriving: list[Gang], moment: int) -> None:
        started = time.perf_counter()
        ahead = forecast(self.state, now=moment, config=CONFIG, carried=self.carried)
        self.forecast_seconds.append(time.perf_counter() - started)
        for gang in arriving:
            estimate = ahead.estimates[GroupKey(NAMESPACE, gang.name)]
            self.estimates[gang.name] = (
                estimate.start if estimate.outcome is Outcome.STARTS else None
            )

    def _settle(self, moment: int, by_name: dict[str, Gang]) -> None:
        """Cycles until one admits nothing, as the operator's loop runs them; an
        admitted gang's pods are bound where planned and start now."""
        while True:
            result = schedule(self.state, now=moment, config=CONFIG, carried=self.carried)
            self.carried = result.carried
            if not result.admissions:
                return
            for admission in result.admissions:
                gang = by_name[admission.group.name]
                self.starts[gang.name] = moment
                status = {
                    "conditions": [
                        {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}
                    ],
                    "plan": dict(admission.placements),
                    "admittedAt": rfc3339(moment),
                }
                assert self.state.apply("PodGroup", pod_group(gang, status)).rejected is None
                for index in range(gang.size):
                    placed = admission.placements[f"{gang.name}-{index}"]
                    assert (
                        self.state.apply("Pod", member(gang, index, placed, moment)).rejected
                        is None
                    )
                actual = self.scenario.actual(self.rng, gang.declared)
                heapq.heappush(self.ends, (moment + round(actual), gang.name))

    def _end(self, gang: Gang) -> None:
        """The gang's pods completed, and its Job (with its PodGroup) is gone."""
        for index in range(gang.size):
            self.state.delete("Pod", NAMESPACE, f"{gang.name}-{index}")
        self.state.delete("PodGroup", NAMESPACE, gang.name)


def errors(runs: list[Run]) -> dict[str, Any]:
    relative, signed, absolute = [], [], []
    immediate = no_time = 0
    waits = []
    for run in runs:
        by_name = {gang.name: gang for gang in run.gangs}
        for name, start in run.starts.items():
            gang = by_name[name]
            estimate = run.estimates.get(name)
            wait = start - gang.submitted
            if estimate is None:
                no_time += 1
                continue
            if wait < MIN_WAIT:
                immediate += 1
                continue
            waits.append(wait)
            error = estimate - start
            relative.append(abs(error) / wait)
            signed.append(error / wait)
            absolute.append(abs(error))
    return {
        "gangs_measured": len(relative),
        "started_within_a_minute": immediate,
        "given_no_time": no_time,
        "wait_p50_s": round(percentile(waits, 50)),
        "wait_p90_s": round(percentile(waits, 90)),
        "relative_error_p50": round(percentile(relative, 50), 3),
        "relative_error_p90": round(percentile(relative, 90), 3),
        "relative_error_signed_median": round(statistics.median(signed), 3),
        "absolute_error_p50_s": round(percentile(absolute, 50)),
        "absolute_error_p90_s": round(percentile(absolute, 90)),
        "histogram": histogram(signed),
        "points": [[round(value, 3) for value in pair] for pair in zip(signed, waits, strict=True)],
    }


def histogram(signed: list[float]) -> dict[str, int]:
    """Signed relative errors counted in buckets a fifth of the wait wide (early < 0)."""
    counts = dict.fromkeys(BUCKETS, 0)
    for error in signed:
        index = min(max(math.floor(round((error + 1) * 5, 9)), 0), len(BUCKETS) - 1)
        counts[BUCKETS[index]] += 1
    return counts


def chart(figures: dict[str, Any]) -> str:
    """The scenarios' histograms side by side, as text (for docs/performance.md)."""
    names = list(figures["scenarios"])
    lines = ["error/wait  " + "  ".join(f"{index + 1:>5}" for index in range(len(names)))]
    for bucket in BUCKETS:
        counts = [figures["scenarios"][name]["histogram"][bucket] for name in names]
        lines.append(f"{bucket:>10}  " + "  ".join(f"{count:>5}" for count in counts))
    lines.extend(f"{index + 1}: {name}" for index, name in enumerate(names))
    return "\n".join(lines)


def main() -> int:
    load = os.getloadavg()
    figures: dict[str, Any] = {
        "cluster": f"{NODES} nodes x {GPUS_PER_NODE} nvidia.com/gpu, {ZONES} zones",
        "workload": (
            f"per seed {BURST + ARRIVALS} gangs of 2-16 pods x 1-2 GPUs, priorities 0/10/100, "
            f"30% in one zone, declared runtimes 10-120m; arrivals every ~{MEAN_GAP}s "
            f"after a burst of {BURST}"
        ),
        "seeds": list(SEEDS),
        "min_wait_s": MIN_WAIT,
        "goal": "where runtimes are declared and accurate: p50 <= 0.10 and p90 <= 0.25 of wait",
        "scenarios": {},
    }
    for scenario in SCENARIOS:
        runs = []
        for seed in SEEDS:
            run = Run(scenario, workload(seed, scenario), random.Random(seed))
            run.run()
            runs.append(run)
        found = errors(runs)
        seconds = [value for run in runs for value in run.forecast_seconds]
        found["forecast_ms_p50"] = round(percentile(seconds, 50) * 1e3, 1)
        figures["scenarios"][scenario.name] = {"says": scenario.says, **found}
        shown = {k: v for k, v in found.items() if k != "points"}
        print(scenario.name, json.dumps(shown))
    figures["load_average_at_start"] = [round(x, 2) for x in load]
    RESULTS.write_text(json.dumps(figures, indent=1) + "\n")
    print(chart(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
