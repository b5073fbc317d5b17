"""A small cluster for the dashboard's tests: zone a of two 4-GPU nodes, zone b of two
2-GPU nodes; one gang running in zone a on a plan half bound, one waiting for zone a,
one too large for any zone."""

from __future__ import annotations

from muster.scheduler import ClusterState
from tests.unit.scheduler.builders import cluster, gang, node, pod, pod_group

ZONE = "topology.kubernetes.io/zone"
NOW = 1_798_761_600.0


def scene() -> ClusterState:
    nodes = [
        node(f"{zone}-{index}", gpu=gpus, labels={ZONE: zone})
        for zone, gpus in (("a", "4"), ("b", "2"))
        for index in (1, 2)
    ]
    plan = {"run-0": "a-1", "run-1": "a-2"}
    running = [
        pod_group("run", min_count=2, admitted=True, plan=plan, topology_key=ZONE),
        pod("run-0", group="run", gpu="4", node_name="a-1", phase="Running"),
        pod("run-1", group="run", gpu="4", gated=False),  # released, not bound yet
    ]
    waiting = gang("wait", 2, gpu="4", topology_key=ZONE, created="2026-01-01T00:01:00Z")
    waiting[1:] = [pod(f"wait-{i}", group="wait", gpu="4", gated=True) for i in range(2)]
    big = gang("big", 4, gpu="4", topology_key=ZONE, created="2026-01-01T00:02:00Z")
    return cluster(*nodes, *running, *waiting, *big)
