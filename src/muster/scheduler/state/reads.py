"""What the edges read of the engine's state: answers, not its dictionaries.

The operator, the dashboard, `explain` and `simulate` show what the engine holds (a
gang's record, its member pods, the nodes) and the operator keeps what its writes need
beside it (a member pod's uid, a gated pod's version). They ask here, so the state's
indexes can change shape without the edges knowing: this is the whole of what they
read, as coscheduling's adapter reads its core only through `core.Manager`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

from muster.api.keys import GroupKey, PodKey
from muster.scheduler.memory.release_failures import ReleaseFailure
from muster.scheduler.state.intake import GroupRecord, NodeRecord, PodRecord
from muster.scheduler.state.state import ClusterState
from muster.scheduler.state.store import PodEntry


def group_records(state: ClusterState) -> Mapping[GroupKey, GroupRecord]:
    """Every PodGroup the engine holds, by key (a read-only view, not a copy)."""
    return MappingProxyType(state.groups)


def waiting_gangs(state: ClusterState) -> frozenset[GroupKey]:
    """The gangs not admitted: the ones a forecast gives a start time."""
    return frozenset(state.unadmitted_gangs)


def pod_entry(state: ClusterState, pod: PodKey) -> PodEntry | None:
    """The pod as the engine tracks it (its record, where it takes capacity)."""
    return state.pods.get(pod)


def pod_record(state: ClusterState, pod: PodKey) -> PodRecord | None:
    """The engine's record of the pod; None for a pod it does not hold."""
    entry = state.pods.get(pod)
    return None if entry is None else entry.record


def pod_count(state: ClusterState) -> int:
    """How many pods the engine holds."""
    return len(state.pods)


def member_entries(state: ClusterState, key: GroupKey) -> list[PodEntry]:
    """The group's member pods, by name."""
    names = sorted(state.members.get(key, ()))
    return [state.pods[PodKey(key.namespace, name)] for name in names]


def member_records(state: ClusterState, key: GroupKey) -> list[PodRecord]:
    """The records of the group's member pods, by name."""
    return [entry.record for entry in member_entries(state, key)]


def node_records(state: ClusterState) -> Iterator[NodeRecord]:
    """The nodes the engine holds, in the order of its node table."""
    return (record for record in state.node_table().records if record is not None)


def release_failure(state: ClusterState, pod: PodKey) -> ReleaseFailure | None:
    """What the API server last answered to the pod's release, when it failed."""
    return state.release_failures.get(pod)
