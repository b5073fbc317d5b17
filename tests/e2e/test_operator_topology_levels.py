"""Preferred topology levels on the real control plane: one rack, else one block, all
in one zone as required."""

from __future__ import annotations

import json

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess

from tests.e2e.support.harness import (
    bound,
    pods_of,
    scheduled_condition,
    wait_all_bound,
    wait_for_reason,
)
from tests.e2e.support.levels import BLOCK, PREFERRED, RACK, ZONE

pytestmark = pytest.mark.e2e


def test_a_gang_takes_one_rack_else_one_block_and_never_leaves_its_zone(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    # zone a: block a1 (racks r1, r2 of 2 GPUs each), block a2 (rack r3 of 4 GPUs);
    # zone b: block b1 (racks r4, r5 of 2 GPUs each).
    where: dict[str, str] = {}
    for zone, block, rack, gpus in (
        ("a", "a1", "r1", 2),
        ("a", "a1", "r2", 2),
        ("a", "a2", "r3", 4),
        ("b", "b1", "r4", 2),
        ("b", "b1", "r5", 2),
    ):
        labels = {BLOCK: f"{pool.name}-{block}", RACK: f"{pool.name}-{rack}"}
        node = pool.add(gpus=gpus, zone=f"{pool.name}-{zone}", labels=labels)
        where[node] = rack
    annotations = {
        "scheduling.muster.dev/topology-key": ZONE,
        PREFERRED: RACK,
    }
    operator.restart(f"--topology-levels={ZONE},{BLOCK},{RACK}")
    try:
        kubectl.apply(gang_job("racked", pool, workers=3, annotations=annotations), namespace)
        pods = wait_all_bound(kubectl, namespace, "racked", 3)
        assert {where[pod["spec"]["nodeName"]] for pod in pods} == {"r3"}
        message = scheduled_condition(kubectl, namespace, "racked")["message"]
        assert message == f"3 pods placed in {RACK}={pool.name}-r3"

        kubectl.apply(gang_job("blocked", pool, workers=4, annotations=annotations), namespace)
        pods = wait_all_bound(kubectl, namespace, "blocked", 4)
        assert {where[pod["spec"]["nodeName"]] for pod in pods} == {"r1", "r2"}
        message = scheduled_condition(kubectl, namespace, "blocked")["message"]
        assert message == (
            f"4 pods placed in {BLOCK}={pool.name}-a1 (no {RACK} domain has room for 4 pods: "
            f"{pool.name}-r1 takes 2)"
        )

        # 5 GPUs free, but no zone has 5: the gang waits rather than leave its zone.
        kubectl.apply(gang_job("zoned", pool, workers=5, annotations=annotations), namespace)
        condition = wait_for_reason(kubectl, namespace, "zoned", "Unschedulable")
        assert f"in any one {ZONE} domain" in condition["message"]
        assert not bound(pods_of(kubectl, namespace, "zoned"))

        # A preferred key of no configured level is refused, the field named.
        stray = gang_job("stray", pool, workers=1, annotations={PREFERRED: "example.com/rak"})
        refused = kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(stray), check=False)
        assert refused.returncode != 0
        assert f'metadata.annotations[{PREFERRED}]: "example.com/rak" is not a topology level' in (
            refused.stderr
        )
    finally:
        operator.restart()
