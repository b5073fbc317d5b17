"""The decision engine: which gangs run now, where their pods go, who is preempted.

Pure and deterministic: no I/O, no asyncio, no clock (``now`` is an argument). The same
state, configuration and `carried` (what the cycle before handed on) always give the
same result, whatever order the objects arrived in; the state is only read.

    state = ClusterState()
    state.apply("Node", node)       # plain Kubernetes objects, applied as events arrive
    result = schedule(state, now=time.time(), config=EngineConfig(), carried=last.carried)

How it is built: rooms in the order a cycle's data moves through them, each
importing only the rooms listed before it (an import-linter contract keeps it so).

- objects: fields, quantities, times, conditions and identities read exactly, once.
- rules: node labels, node affinity, taints, pod affinity and spread, volumes and
  disruption budgets, as records evaluated over the node table with numpy.
- memory: what a gang carries between cycles (its gang memory and kube-scheduler's
  refusals, kept in status), failed releases, runtimes, Jobs without the native field,
  and whether the cluster's own gang scheduling has a Job with it.
- decisions: the plan the operator carries out and the results of a cycle, frozen.
- state: objects taken in through one door (`ClusterState.apply`, `delete`) as
  records on arrival, and the trace of them; capacity as arrays (nodes x
  resources); placed pods indexed; the static predicates per node.
- placement: best fit, the fullest fitting topology domain, inter-pod rules member
  by member, the cheapest lower-priority victims, and why a gang does not fit.
- devices: Dynamic Resource Allocation in one package, in three bands among the
  rooms: selectors, records, the book and the ledger below `state`; a gang's claims
  (`devices.gang`) between `state` and `placement`; the devices victims free
  (`devices.preemption`) above `placement`.
- lifecycle: an admitted gang followed to completion or rolled back, each transition
  written ahead; the status it leaves; refused nodes avoided; pods let go.
- cycle: the queue (priority, then age; backfill; nodes closed for starving gangs), and the
  warnings about single objects the plan gives (`notices`).
- forecast: the engine's own cycles run forward in time, and the estimates worth
  writing.

The heuristics, and where they can miss, are described in `placement.fit` (mixed-shape
gangs), `placement.topology` (domain choice), `cycle.refusal` (closed nodes),
`placement.preemption` (victim count).
"""

from muster.scheduler.config import EngineConfig
from muster.scheduler.cycle.engine import schedule
from muster.scheduler.state.state import ClusterState

__all__ = ["ClusterState", "EngineConfig", "schedule"]
