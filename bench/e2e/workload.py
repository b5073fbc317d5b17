"""The benchmark's workload: a burst of gang Jobs, written the ways compared.

One list of Jobs (names, sizes, GPUs per pod, an optional zone constraint) becomes
manifests for each mode, so every mode schedules exactly the same demand:

- ``plain``: ordinary Jobs for kube-scheduler alone (the floor: no gang semantics). A
  zone constraint becomes a required pod affinity to the Job's own pods, the closest
  per-pod equivalent of "all in one zone".
- ``floor``: the same Jobs as ``plain``, their pods gated at creation (a scheduling
  gate in the pod template) for the benchmark's floor client (bench/e2e/floor.py) to
  release one patch each: the floor under any scheduler that gates and releases.
- ``muster``: the same Jobs opted in to Muster with its label and annotations.
- ``native``: the same Jobs with the Kubernetes 1.37 field ``spec.scheduling``.
- ``kueue``: the same Jobs queued in Kueue (its queue-name label) with Kueue's
  topology-aware scheduling: a zone constraint becomes the PodSet annotation
  ``podset-required-topology``; the other Jobs prefer one node
  (``podset-preferred-topology`` on the hostname), which Kueue widens to a zone, then
  to the whole cluster, when they do not fit. A Job that names its own preferred
  level (bench/levels/shape.py) prefers that one instead, in Kueue and in Muster alike.
- ``kueue-muster``: the same Jobs queued in Kueue and opted in to Muster as in
  ``muster``; Kueue only keeps the quota (bench/e2e/kueue.py: its flavor has no topology).

Pods carry KWOK's completion-delay annotation so they keep their capacity for the
whole measurement instead of finishing and freeing it, unless a Job is given a
shorter hold of its own (bench/levels/waves.py frees racks part-way that way).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal, get_args

from hack.kueue import QUEUE_NAME_LABEL

from bench.e2e.floor import FLOOR_GATE
from muster.api.constants import (
    MIN_COUNT_ANNOTATION,
    POLICY_GANG,
    POLICY_LABEL,
    TOPOLOGY_PREFERRED_ANNOTATION,
)
from muster.api.constants import TOPOLOGY_KEY_ANNOTATION as MUSTER_TOPOLOGY_ANNOTATION

Mode = Literal["plain", "floor", "muster", "native", "kueue", "kueue-muster"]
MODES: tuple[Mode, ...] = get_args(Mode)
# The modes `bench/e2e/run.py` runs unless told otherwise, every peer side by side; the
# Kueue pair alone (`--modes kueue,kueue-muster`) goes into a results file of its own.
DEFAULT_MODES: tuple[Mode, ...] = ("plain", "floor", "native", "kueue", "muster")
MUSTER_MODES: frozenset[Mode] = frozenset({"muster", "kueue-muster"})
KUEUE_MODES: frozenset[Mode] = frozenset({"kueue", "kueue-muster"})

ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"
# The LocalQueue in the benchmark's namespace (bench/e2e/kueue.py makes it).
LOCAL_QUEUE = "bench"
KUEUE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
GPU = "nvidia.com/gpu"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
HOLD_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"

# Sixteen Job sizes with a mean of exactly 8 pods, from pairs of workers to 32-pod runs;
# the workload repeats this mix and shuffles it.
SIZE_MIX: tuple[int, ...] = (2, 2, 2, 2, 4, 4, 4, 4, 8, 8, 8, 8, 8, 16, 16, 32)


@dataclass(frozen=True, slots=True)
class GangJob:
    """One Job of the workload: all ``size`` pods must run at once."""

    name: str
    size: int
    gpus_per_pod: int
    topology_key: str | None
    # The narrowest level it would rather sit in (a node label key), for the modes that
    # know levels: Muster's `topology-preferred`, Kueue's `podset-preferred-topology`.
    preferred_key: str | None = None
    # How long its pods run once started (a Go duration), if not the run's own hold.
    hold: str | None = None

    @property
    def gpus(self) -> int:
        return self.size * self.gpus_per_pod


def make_workload(*, jobs: int, gpus_per_pod: int, zone_share: float, seed: int) -> list[GangJob]:
    """``jobs`` Jobs drawn from SIZE_MIX, about ``zone_share`` of them confined to one zone.

    The same arguments always give the same Jobs, so runs and modes are comparable.
    """
    rng = random.Random(seed)
    sizes = [SIZE_MIX[index % len(SIZE_MIX)] for index in range(jobs)]
    rng.shuffle(sizes)
    width = len(str(max(jobs - 1, 0)))
    return [
        GangJob(
            name=f"gang-{index:0{width}d}",
            size=size,
            gpus_per_pod=gpus_per_pod,
            topology_key=ZONE_KEY if rng.random() < zone_share else None,
        )
        for index, size in enumerate(sizes)
    ]


def job_manifest(job: GangJob, mode: Mode, *, namespace: str, hold: str) -> dict[str, Any]:
    """The Job as ``mode`` submits it; pods stay Running for the Job's own hold, else
    ``hold`` (a Go duration)."""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    template_annotations = {HOLD_ANNOTATION: job.hold or hold}
    spec: dict[str, Any] = {
        "parallelism": job.size,
        "completions": job.size,
        "backoffLimit": 0,
        "template": {
            "metadata": {"annotations": template_annotations},
            "spec": _pod_spec(job, mode),
        },
    }
    if mode in KUEUE_MODES:
        labels[QUEUE_NAME_LABEL] = LOCAL_QUEUE
    if mode == "kueue":
        if job.topology_key:
            template_annotations[KUEUE_REQUIRED_TOPOLOGY] = job.topology_key
        if job.preferred_key or not job.topology_key:
            template_annotations[KUEUE_PREFERRED_TOPOLOGY] = job.preferred_key or HOSTNAME_KEY
    if mode in MUSTER_MODES:
        labels[POLICY_LABEL] = POLICY_GANG
        annotations[MIN_COUNT_ANNOTATION] = str(job.size)
        if job.topology_key:
            annotations[MUSTER_TOPOLOGY_ANNOTATION] = job.topology_key
        if job.preferred_key:
            annotations[TOPOLOGY_PREFERRED_ANNOTATION] = job.preferred_key
    elif mode == "native":
        scheduling: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": job.size}}}
        if job.topology_key:
            scheduling["schedulingConstraints"] = {"topology": [{"key": job.topology_key}]}
        spec["scheduling"] = scheduling
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job.name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }


def _pod_spec(job: GangJob, mode: Mode) -> dict[str, Any]:
    gpus = str(job.gpus_per_pod)
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "worker",
                "image": "registry.invalid/worker:bench",
                "resources": {
                    "requests": {"cpu": "100m", "memory": "256Mi", GPU: gpus},
                    "limits": {GPU: gpus},
                },
            }
        ],
    }
    if mode == "floor":
        spec["schedulingGates"] = [{"name": FLOOR_GATE}]
    if mode in ("plain", "floor") and job.topology_key:
        spec["affinity"] = {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {JOB_NAME_LABEL: job.name}},
                        "topologyKey": job.topology_key,
                    }
                ]
            }
        }
    return spec
