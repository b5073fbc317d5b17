"""The topology levels declared once, in a Kueue Topology, on the real control plane:
the operator watches it as installed (no `--topology-levels`), plans by its levels and
refuses at admission a preferred level that is not one of them."""

from __future__ import annotations

import json

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import scheduled_condition, wait_all_bound
from tests.e2e.support.kueue import KUEUE_API
from tests.e2e.support.levels import BLOCK, PREFERRED, RACK, ZONE

pytestmark = pytest.mark.e2e


def test_a_kueue_topology_gives_the_levels_a_gang_falls_back_through(
    kueue: None, operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    # zone a: block a1 (racks r1, r2 of 2 GPUs each), block a2 (rack r3 of 1 GPU).
    where: dict[str, str] = {}
    for block, rack, gpus in (("a1", "r1", 2), ("a1", "r2", 2), ("a2", "r3", 1)):
        labels = {BLOCK: f"{pool.name}-{block}", RACK: f"{pool.name}-{rack}"}
        where[pool.add(gpus=gpus, zone=f"{pool.name}-a", labels=labels)] = rack
    topology = {
        "apiVersion": KUEUE_API,
        "kind": "Topology",
        "metadata": {"name": pool.name},
        "spec": {"levels": [{"nodeLabel": key} for key in (ZONE, BLOCK, RACK)]},
    }
    kubectl.apply(topology)
    try:
        # Admission knows the levels once its watch has the Topology.
        stray = gang_job("stray", pool, workers=1, annotations={PREFERRED: "example.com/rak"})

        refusals: list[str] = []

        def refused() -> bool:
            answer = kubectl(
                "apply", "-n", namespace, "-f", "-", input=json.dumps(stray), check=False
            )
            if answer.returncode == 0:
                kubectl("delete", "job", "stray", "-n", namespace, "--wait=false")
                return False
            refusals.append(answer.stderr)
            return True

        wait_until("the Topology's levels at admission", refused, timeout=30, interval=1)
        named = f'"example.com/rak" is not a topology level: {ZONE}, {BLOCK}, {RACK}'
        assert named in refusals[-1]

        annotations = {"scheduling.muster.dev/topology-key": ZONE, PREFERRED: RACK}
        kubectl.apply(gang_job("blocked", pool, workers=4, annotations=annotations), namespace)
        pods = wait_all_bound(kubectl, namespace, "blocked", 4)
        assert {where[pod["spec"]["nodeName"]] for pod in pods} == {"r1", "r2"}
        assert scheduled_condition(kubectl, namespace, "blocked")["message"] == (
            f"4 pods placed in {BLOCK}={pool.name}-a1 (no {RACK} domain has room for 4 pods: "
            f"{pool.name}-r1 takes 2)"
        )
    finally:
        kubectl("delete", "topologies.kueue.x-k8s.io", pool.name, "--wait=false")
