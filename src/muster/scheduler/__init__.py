"""The decision engine: which gangs run now, where their pods go, who is preempted.

Pure and deterministic: no I/O, no asyncio, no clock (``now`` is an argument). The same
state and configuration always give the same result, whatever order the objects
arrived in.

    state = ClusterState()
    state.apply_node(node)          # plain Kubernetes objects, applied as events arrive
    result = schedule(state, now=time.time(), config=EngineConfig())

How it is built, one module per job:

- intake, quantity, requests: objects become small records once, on arrival
  (quantities exact, pod requests as kube-scheduler sums them).
- state: capacity as numpy arrays (nodes x resources), adjusted per event.
- labels, node_affinity, taints, predicates: static filters, vectorised over nodes and
  cached per set of placement rules; what is not modelled is listed in `predicates`.
- fit, topology: best-fit placement of a gang's shapes, the fullest fitting domain.
- pod_terms, placed, interpod_view, interplay: pod affinity, anti-affinity and topology
  spread (the rules as records; placed pods indexed by labels; one cycle's view of
  them; a gang planned pod by pod under them).
- queue, engine: the cycle (priority, then age; backfill; holds for starving gangs).
- preemption: the cheapest lower-priority victims.
- refusals, avoidance: what kube-scheduler refused a gang (from its status), the
  nodes its plans then leave out, and when it is not planned at all.
- lifecycle, follow, transitions, plan: an admitted gang followed to completion or
  rolled back, each transition written ahead; release_failures: what the API server
  answered when a pod could not be released (an observation the operator reports).
- dropped_field, let_go: a Job stored without the native field its pods were gated
  for, and its pods let go to run as any pod's.
- explain: kube-scheduler-style reasons and the gang view.
- results: what a cycle decided, as frozen values.

The heuristics, and where they can miss, are described in `fit` (mixed-shape gangs),
`topology` (domain choice), `engine` (holds), `preemption` (victim count).
"""

from muster.scheduler.config import EngineConfig
from muster.scheduler.engine import schedule
from muster.scheduler.state import ClusterState

__all__ = ["ClusterState", "EngineConfig", "schedule"]
