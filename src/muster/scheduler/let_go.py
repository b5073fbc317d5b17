"""Letting go the pods of a Job whose native field the API server dropped.

Such a Job (`dropped_field`) has no PodGroup and never will: the API server stored
it as a plain Job, and runs it as one. So does Muster. Each of its gated pods loses
the gate, with no node pinned (there is no gang to plan for), and kube-scheduler
places it as it places any pod. The Job is told why, by a Warning, once: in the
cycle that lets its first pod go (later pods, replacements included, go quietly).

Nothing is written down first: the decision rests on the stored Job alone, which
does not change (a pod template is immutable), so any cycle after a crash decides
it again. A Job whose PodGroup exists after all (made by hand) is left to it.
"""

from __future__ import annotations

from muster.api.constants import GANG_GATE, POLICY_LABEL
from muster.scheduler.dropped_field import DroppedField
from muster.scheduler.keys import PodKey
from muster.scheduler.plan import Step, StepKind, TellJob, Ungate
from muster.scheduler.state import ClusterState

REASON = "SchedulingFieldDropped"
MESSAGE = (
    "the API server dropped spec.scheduling when it stored this Job (its WorkloadWithJob"
    " feature gate is off), so the Job runs without gang scheduling: its pods are"
    f" released from the gate {GANG_GATE} as they come. To run it as a gang on this"
    f" cluster, create it with the label {POLICY_LABEL}: gang instead"
)


def let_go(state: ClusterState) -> tuple[Step, ...]:
    """One step for each Job whose pods wait for a PodGroup that nothing will make."""
    steps = []
    for dropped in sorted(state.dropped_fields.values(), key=lambda record: record.job):
        step = _let_go(state, dropped)
        if step is not None:
            steps.append(step)
    return tuple(steps)


def _let_go(state: ClusterState, dropped: DroppedField) -> Step | None:
    if dropped.group in state.groups:
        return None
    names = sorted(state.members.get(dropped.group, ()))
    records = [state.pods[PodKey(dropped.group.namespace, name)].record for name in names]
    waiting = tuple(
        record.key
        for record in records
        if record.gated and not record.terminal and not record.terminating
    )
    if not waiting:
        return None
    first = all(record.gated for record in records)
    told = (TellJob(dropped.job, True, REASON, MESSAGE),) if first else ()
    return Step(dropped.group, StepKind.LET_GO, (Ungate(waiting), *told))
