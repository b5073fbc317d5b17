"""Letting go the pods no gang will ever hold: ungated, with no node pinned.

Two kinds of pods wait behind Muster's gate for nothing:

- the members of a PodGroup whose policy is `basic` (upstream's "schedule each pod
  on its own"): the pod webhook gates every labelled pod that no Job controls, as
  it cannot read the group's policy at the pod's creation, and such a group is left
  to kube-scheduler, pod by pod. Its gated pods go as they come, quietly;
- the pods of a Job whose native field the API server dropped (`dropped_field`):
  such a Job has no PodGroup and never will (the API server stored it as a plain
  Job, and runs it as one; so does Muster). The Job is told why, by a Warning,
  once: in the cycle that lets its first pod go (later pods, replacements included,
  go quietly). A Job whose PodGroup exists after all (made by hand) is left to it.

kube-scheduler places each pod let go as it places any pod. Nothing is written down
first: the decision rests on the group's policy or on the stored Job, neither of
which changes while the pods wait, so any cycle after a crash decides it again.
"""

from __future__ import annotations

from muster.api.constants import GANG_GATE, POLICY_LABEL
from muster.api.keys import GroupKey, PodKey
from muster.scheduler.decisions.plan import RecordEvent, Step, StepKind, Ungate, on_job
from muster.scheduler.memory.dropped_field import DroppedField
from muster.scheduler.state.reads import member_records
from muster.scheduler.state.state import ClusterState

REASON = "SchedulingFieldDropped"
MESSAGE = (
    "the API server dropped spec.scheduling when it stored this Job (its WorkloadWithJob"
    " feature gate is off), so the Job runs without gang scheduling: its pods are"
    f" released from the gate {GANG_GATE} as they come. To run it as a gang on this"
    f" cluster, create it with the label {POLICY_LABEL}: gang instead"
)


def let_go(state: ClusterState) -> tuple[Step, ...]:
    """One step for each basic group with gated members, and for each Job whose pods
    wait for a PodGroup that nothing will make."""
    basic = sorted(key for key, record in state.groups.items() if not record.gang)
    steps = [
        Step(key, StepKind.LET_GO, (Ungate(waiting),))
        for key in basic
        if (waiting := _waiting(state, key))
    ]
    for dropped in sorted(state.dropped_fields.values(), key=lambda record: record.job):
        step = _let_go_dropped(state, dropped)
        if step is not None:
            steps.append(step)
    return tuple(steps)


def _waiting(state: ClusterState, group: GroupKey) -> tuple[PodKey, ...]:
    """The group's members that are gated and neither finished nor leaving."""
    return tuple(
        record.key
        for record in member_records(state, group)
        if record.gated and not record.terminal and not record.terminating
    )


def _let_go_dropped(state: ClusterState, dropped: DroppedField) -> Step | None:
    if dropped.group in state.groups:
        return None
    waiting = _waiting(state, dropped.group)
    if not waiting:
        return None
    first = all(record.gated for record in member_records(state, dropped.group))
    told = (RecordEvent(on_job(dropped.job), True, REASON, MESSAGE),) if first else ()
    return Step(dropped.group, StepKind.LET_GO, (Ungate(waiting), *told))
