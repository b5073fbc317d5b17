"""The decision engine: which gangs run now, where their pods go, who is preempted.

Pure and deterministic: no I/O, no asyncio, no clock (``now`` is an argument). The same
state and configuration always give the same result.

    state = ClusterState()
    state.apply_node(node)          # plain Kubernetes objects, applied as events arrive
    result = schedule(state, now=time.time(), config=EngineConfig())
"""

from muster.scheduler.config import EngineConfig
from muster.scheduler.engine import schedule
from muster.scheduler.state import ClusterState

__all__ = ["ClusterState", "EngineConfig", "schedule"]
