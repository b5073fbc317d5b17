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

The engine's public face is this module and `muster.scheduler.decisions` (the plan's
values and a cycle's results): code outside the engine imports from these two only,
never from the rooms (an import-linter contract keeps it so), so the rooms can be
rearranged without the edges knowing. What the face offers, below, is the whole of
what the operator, the webhooks, the CLI and the simulation use.
"""

from muster.scheduler.config import EngineConfig
from muster.scheduler.cycle.engine import schedule
from muster.scheduler.devices.gang import NodeDevices, devices_per_node
from muster.scheduler.devices.selector_cost import COST_LIMIT
from muster.scheduler.devices.selectors import TIME_BUDGET, Case, Judgement, judge
from muster.scheduler.forecast.estimate_book import EstimateBook, Update, describe, topology_keys
from muster.scheduler.forecast.estimate_words import clock_time, starts_in, waiting_for
from muster.scheduler.forecast.forecast import (
    DEFAULT_HORIZON_SECONDS,
    Estimate,
    Forecast,
    Outcome,
    Reach,
    Run,
)
from muster.scheduler.forecast.forecast import forecast as run_forecast  # the room is `forecast`
from muster.scheduler.lifecycle.status import (
    admitted_message,
    needs_write,
    preempted_message,
    with_estimate,
)
from muster.scheduler.memory.dropped_field import dropped_field, gated_for_field
from muster.scheduler.memory.gang_memory import gang_memory_from
from muster.scheduler.memory.native_jobs import AskAgain, native_owner
from muster.scheduler.memory.release_failures import ReleaseFailure
from muster.scheduler.memory.runtimes import format_duration
from muster.scheduler.objects.conditions import condition
from muster.scheduler.objects.fields import IntakeError
from muster.scheduler.objects.times import parse_timestamp
from muster.scheduler.placement.explain import format_amount, nodes_line
from muster.scheduler.rules.node_affinity import Requirement, Term
from muster.scheduler.rules.pod_terms import label_selector
from muster.scheduler.state.intake import GroupRecord, NodeRecord, PodRecord
from muster.scheduler.state.kinds import Applied, ObjectKey, key_of
from muster.scheduler.state.min_resources import beyond_cluster
from muster.scheduler.state.reads import (
    group_records,
    member_entries,
    member_records,
    node_records,
    pod_count,
    pod_entry,
    pod_record,
    release_failure,
    waiting_gangs,
)
from muster.scheduler.state.state import ClusterState
from muster.scheduler.state.store import PodEntry
from muster.scheduler.state.trace import (
    APPLY,
    CYCLE,
    DELETE,
    JUDGED,
    RELEASE,
    START,
    apply_line,
    cycle_line,
    delete_line,
    judged_line,
    observe_judged,
    observe_release,
    release_line,
    start_line,
    traced_decisions,
)

__all__ = [
    "APPLY",
    "COST_LIMIT",
    "CYCLE",
    "DEFAULT_HORIZON_SECONDS",
    "DELETE",
    "JUDGED",
    "RELEASE",
    "START",
    "TIME_BUDGET",
    "Applied",
    "AskAgain",
    "Case",
    "ClusterState",
    "EngineConfig",
    "Estimate",
    "EstimateBook",
    "Forecast",
    "GroupRecord",
    "IntakeError",
    "Judgement",
    "NodeDevices",
    "NodeRecord",
    "ObjectKey",
    "Outcome",
    "PodEntry",
    "PodRecord",
    "Reach",
    "ReleaseFailure",
    "Requirement",
    "Run",
    "Term",
    "Update",
    "admitted_message",
    "apply_line",
    "beyond_cluster",
    "clock_time",
    "condition",
    "cycle_line",
    "delete_line",
    "describe",
    "devices_per_node",
    "dropped_field",
    "format_amount",
    "format_duration",
    "gang_memory_from",
    "gated_for_field",
    "group_records",
    "judge",
    "judged_line",
    "key_of",
    "label_selector",
    "member_entries",
    "member_records",
    "native_owner",
    "needs_write",
    "node_records",
    "nodes_line",
    "observe_judged",
    "observe_release",
    "parse_timestamp",
    "pod_count",
    "pod_entry",
    "pod_record",
    "preempted_message",
    "release_failure",
    "release_line",
    "run_forecast",
    "schedule",
    "start_line",
    "starts_in",
    "topology_keys",
    "traced_decisions",
    "waiting_for",
    "waiting_gangs",
    "with_estimate",
]
