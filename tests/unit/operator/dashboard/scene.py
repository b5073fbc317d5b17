"""A small cluster for the dashboard's tests: zone a of two 4-GPU nodes, zone b of two
2-GPU nodes; one gang running in zone a on a plan half bound, one waiting for zone a,
one too large for any zone; and a feed of that cluster's one board."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.api.wire import JsonObject
from muster.operator.config import OperatorConfig
from muster.operator.dashboard.board import board_of
from muster.operator.dashboard.feed import Feed
from muster.operator.dashboard.rendering import shown, templates
from muster.operator.intake.cache import LiveCache
from muster.scheduler import ClusterState, EngineConfig
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


EVENT = {"type": "Normal", "reason": "Waiting", "message": "needs 8 GPUs", "count": 2}


class StillFeed(Feed):
    """A feed of one board (number 3), its cache filled by hand, its events given."""

    def __init__(self) -> None:
        self.config = OperatorConfig()
        self.cache = LiveCache()
        self.cache.state = scene()
        for name in ("wait", "big"):
            self.cache.pod_groups.put(GroupKey("default", name), pod_group(name, min_count=2))
        self.environment = templates()
        board = board_of(self.cache.state, now=NOW, config=EngineConfig(), horizon=86400)
        self.shown = shown(board, 3, self.environment)

    async def events(self, key: GroupKey) -> list[JsonObject]:
        return [EVENT]
