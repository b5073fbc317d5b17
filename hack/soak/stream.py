"""The soak's steady stream of gang Jobs: each planned Job as a manifest, submitted at its
moment by a submitter that retries refusals (a webhook outage refuses gang Jobs).

The Jobs run on a pool of simulated nodes of the soak's own (`tests/e2e/support/harness.py`'s
`NodePool` and `gang_job`, as the e2e tests build theirs): two zones, so that a
topology constraint has a choice to make.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from tests.e2e.faults.faults import create_until_admitted

from hack.soak.plan import PRIORITIES, JobPlan

NAMESPACE = "muster-soak"
ZONE = "topology.kubernetes.io/zone"
ZONES = ("zone-a", "zone-b")
NODES_PER_ZONE = 4
GPUS_PER_NODE = 4
PRIORITY_VALUES = dict(zip(PRIORITIES, (100, 1000), strict=True))
POOL = "soak"
SUBMIT_PATIENCE = 300.0


def job_manifest(job: JobPlan, pool: NodePool) -> dict[str, Any]:
    annotations = {}
    if job.topology:
        annotations["scheduling.muster.dev/topology-key"] = ZONE
    if job.declared_runtime:
        annotations["scheduling.muster.dev/expected-runtime"] = f"{job.runtime}s"
    return gang_job(
        job.name,
        pool,
        workers=job.workers,
        gpus=job.gpus,
        annotations=annotations,
        run_for=f"{job.runtime}s",
        priority_class=job.priority,
    )


def probe_job(pool: NodePool) -> str:
    """A gang Job for a server-side dry run: refused while no webhook answers."""
    probe = JobPlan("soak-probe", 0.0, 1, 1, PRIORITIES[0], 1, False, False)
    return json.dumps(job_manifest(probe, pool))


def prepare(kubectl: Kubectl) -> NodePool:
    """The namespace, the PriorityClasses and the pool of nodes the Jobs run on."""
    kubectl("create", "namespace", NAMESPACE)
    for name, value in PRIORITY_VALUES.items():
        kubectl.apply(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
    pool = NodePool(kubectl, name=POOL)
    for zone in ZONES:
        for _ in range(NODES_PER_ZONE):
            pool.add(gpus=GPUS_PER_NODE, zone=zone)
    return pool


@dataclass
class Submitter:
    """Submits each planned Job at its moment, in a thread; records when each was admitted."""

    kubectl: Kubectl
    pool: NodePool
    jobs: tuple[JobPlan, ...]
    clock: Callable[[], float]  # seconds after the start
    submitted: dict[str, float] = field(default_factory=dict)
    refusals: int = 0
    errors: list[str] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="soak-submitter", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=SUBMIT_PATIENCE)

    def _run(self) -> None:
        for job in self.jobs:
            wait = job.at - self.clock()
            if wait > 0 and self._stopping.wait(wait):
                return
            manifest = job_manifest(job, self.pool)
            try:
                self.refusals += create_until_admitted(
                    self.kubectl, NAMESPACE, manifest, timeout=SUBMIT_PATIENCE
                )
            except AssertionError as error:
                self.errors.append(f"{job.name}: {error}")
                continue
            self.submitted[job.name] = self.clock()
