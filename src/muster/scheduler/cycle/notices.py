"""Warnings about single objects that nothing else tells their owners about.

- A member pod whose PodGroup does not exist stays gated. Once `orphan_grace`
  seconds have passed since the pod was created, it is told why: a Job's pods exist
  before the operator has made its PodGroup, and the grace keeps the warning for a
  PodGroup that is truly missing. Counted from the pod's creation, the wait is the
  same whoever decides and whenever it restarted. Not told: pods the cluster's own
  gang scheduling has (`spec.schedulingGroup`), pods of a Job whose opt-in the API
  server dropped (the engine lets them go, `let_go`, and tells their Job), and
  pods of a PodGroup the engine cannot use (that PodGroup is told about instead).
- A member pod created bound to its node (`spec.nodeName`, marked so by the pod
  webhook) bypassed gang admission and counts as a bound member of its gang. The
  webhook warned whoever created it, which for a Job's pod is only the Job
  controller; the pod itself is told, once it exists, from here rather than by the
  webhook, which must have no side effect.
- An object the engine cannot use is invisible to scheduling (a pod holds no
  capacity, a node offers none, a gang never runs), and without a word only the
  operator's log would say why. Each version of it is told once.

What was told is handed from cycle to cycle (`Carried.told`): a notice still standing
is not given again; one that stopped standing (the PodGroup appeared, the object was
fixed) is forgotten, so it is given again if it stands again.
"""

from __future__ import annotations

from muster.api.keys import GroupKey, PodKey
from muster.scheduler.config import EngineConfig
from muster.scheduler.decisions.plan import Notice
from muster.scheduler.state.state import ClusterState

NOT_FOUND = "PodGroupNotFound"
IGNORED = "IgnoredByScheduler"
BYPASSED = "BypassedGangAdmission"


def notices(
    state: ClusterState, *, now: float, config: EngineConfig, told: frozenset[Notice]
) -> tuple[tuple[Notice, ...], frozenset[Notice], float | None]:
    """The notices to give now, those standing (to hand to the next cycle as told),
    and when the next pod's grace ends, if one is still within it."""
    orphans, due = _orphans(state, now=now, grace=config.orphan_grace)
    standing = (*orphans, *_bypasses(state), *_rejections(state))
    return tuple(n for n in standing if n not in told), frozenset(standing), due


def _orphans(state: ClusterState, *, now: float, grace: float) -> tuple[list[Notice], float | None]:
    """Member pods past their grace whose PodGroup is missing; the next end of a grace."""
    let_go = {dropped.group for dropped in state.dropped_fields.values()}
    missing = sorted(
        key
        for key in state.missing_groups - let_go
        if ("PodGroup", key.namespace, key.name) not in state.rejected
    )
    found: list[Notice] = []
    due: float | None = None
    for key in missing:
        for name in sorted(state.members[key]):
            record = state.pods[PodKey(key.namespace, name)].record
            if record.native:
                continue  # the cluster's own gang scheduling has it
            ends = float("-inf") if record.created is None else record.created + grace
            if now < ends:
                due = ends if due is None else min(due, ends)
                continue
            found.append(_orphan(key, name))
    return found, due


def _orphan(key: GroupKey, name: str) -> Notice:
    message = (
        f"PodGroup {key.name} does not exist in namespace {key.namespace}; "
        "the pod stays gated until it is created"
    )
    return Notice("Pod", key.namespace, name, "", NOT_FOUND, message)


def _bypasses(state: ClusterState) -> list[Notice]:
    """Member pods created bound to their node, each told once while it exists."""
    found = []
    for key in sorted(state.bypassing):
        record = state.pods[key].record
        message = (
            f"created bound to node {record.node_name} (spec.nodeName): the pod bypassed gang"
            f" admission and counts as a bound member of PodGroup {record.group_name}"
        )
        found.append(Notice("Pod", key.namespace, key.name, "", BYPASSED, message))
    return found


def _rejections(state: ClusterState) -> list[Notice]:
    return [
        Notice(
            kind,
            namespace,
            name,
            rejected.version,
            IGNORED,
            f"Muster cannot use this {kind} and ignores it: {rejected.reason}",
        )
        for (kind, namespace, name), rejected in sorted(state.rejected.items())
    ]
