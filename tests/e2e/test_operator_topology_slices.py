"""Slices on the real control plane: Indexed Jobs whose every 8 (or 4, or 3)
consecutive workers land in one rack, inside one block of their zone."""

from __future__ import annotations

import json
from typing import Any

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess

from tests.e2e.support.harness import scheduled_condition, wait_all_bound
from tests.e2e.support.levels import BLOCK, PREFERRED, RACK, SLICE, SLICE_SIZE, ZONE

pytestmark = pytest.mark.e2e

INDEX = "batch.kubernetes.io/job-completion-index"


def sliced_job(
    name: str, pool: NodePool, *, workers: int, size: int, preferred: str
) -> dict[str, Any]:
    """An Indexed gang Job in one zone, preferring one `preferred` domain, in slices of
    `size` workers per rack."""
    annotations = {
        "scheduling.muster.dev/topology-key": ZONE,
        PREFERRED: preferred,
        SLICE: RACK,
        SLICE_SIZE: str(size),
    }
    job = gang_job(name, pool, workers=workers, annotations=annotations)
    job["spec"]["completionMode"] = "Indexed"
    return job


def racks_by_slice(pods: list[dict[str, Any]], where: dict[str, str], size: int) -> list[set[str]]:
    """The racks each slice of workers (by completion index) is bound in, in order."""
    slices: dict[int, set[str]] = {}
    for pod in pods:
        index = int(pod["metadata"]["labels"][INDEX])
        slices.setdefault(index // size, set()).add(where[pod["spec"]["nodeName"]])
    return [slices[index] for index in sorted(slices)]


def test_sliced_gangs_land_a_slice_per_rack_inside_one_block(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    # zone a: block a1 (rack r1: 2+1 GPUs, r2: 4+1), block a2 (r3: 2+2, r4: 4);
    # zone b: block b1 (r5: 4, r6: 2); zone c: block c1 (r7: 4+4, r8: 4+4). Blocks a1
    # and a2 have 8 GPUs each, but only a2 holds two slices of 4.
    where: dict[str, str] = {}
    for zone, block, rack, gpus in (
        ("a", "a1", "r1", (2, 1)),
        ("a", "a1", "r2", (4, 1)),
        ("a", "a2", "r3", (2, 2)),
        ("a", "a2", "r4", (4,)),
        ("b", "b1", "r5", (4,)),
        ("b", "b1", "r6", (2,)),
        ("c", "c1", "r7", (4, 4)),
        ("c", "c1", "r8", (4, 4)),
    ):
        labels = {BLOCK: f"{pool.name}-{block}", RACK: f"{pool.name}-{rack}"}
        for count in gpus:
            where[pool.add(gpus=count, zone=f"{pool.name}-{zone}", labels=labels)] = rack
    operator.restart(f"--topology-levels={ZONE},{BLOCK},{RACK}")
    try:
        kubectl.apply(sliced_job("eights", pool, workers=16, size=8, preferred=BLOCK), namespace)
        pods = wait_all_bound(kubectl, namespace, "eights", 16)
        assert racks_by_slice(pods, where, 8) == [{"r7"}, {"r8"}]
        message = scheduled_condition(kubectl, namespace, "eights")["message"]
        assert message == f"16 pods placed in {BLOCK}={pool.name}-c1 in slices of 8 per {RACK}"

        kubectl.apply(sliced_job("blocked", pool, workers=8, size=4, preferred=BLOCK), namespace)
        pods = wait_all_bound(kubectl, namespace, "blocked", 8)
        assert racks_by_slice(pods, where, 4) == [{"r3"}, {"r4"}]
        message = scheduled_condition(kubectl, namespace, "blocked")["message"]
        assert message == f"8 pods placed in {BLOCK}={pool.name}-a2 in slices of 4 per {RACK}"

        # No rack has 6 GPUs free; of the blocks, a1 holds two slices of 3, b1 one.
        kubectl.apply(sliced_job("racked", pool, workers=6, size=3, preferred=RACK), namespace)
        pods = wait_all_bound(kubectl, namespace, "racked", 6)
        assert racks_by_slice(pods, where, 3) == [{"r1"}, {"r2"}]
        message = scheduled_condition(kubectl, namespace, "racked")["message"]
        assert message == (
            f"6 pods placed in {BLOCK}={pool.name}-a1 in slices of 3 per {RACK} "
            f"(no {RACK} domain has room for 6 pods "
            f"in slices of 3 per {RACK}: {pool.name}-r1 takes 3)"
        )

        # A slice level wider than the preferred one is refused, the field named.
        wide = sliced_job("wide", pool, workers=2, size=2, preferred=RACK)
        wide["metadata"]["annotations"][SLICE] = BLOCK
        refused = kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(wide), check=False)
        assert refused.returncode != 0
        assert f'metadata.annotations[{SLICE}]: "{BLOCK}" is wider than "{RACK}"' in (
            refused.stderr
        )
    finally:
        operator.restart()
