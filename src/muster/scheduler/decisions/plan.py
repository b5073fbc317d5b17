"""What a cycle asks the operator to do, in order: the plan, as immutable values.

The engine decides; the operator (and `muster simulate`, in memory) only carries
out. A plan is a sequence of steps, one per gang transition; the actions of a step
run in order and a step stops at its first action that fails, so a decision is always
written down (`WriteStatus`) before anything acts on it (`Evict`, `Release`):

- admit:     write the plan, then release its pods;
- preempt:   write each victim gang as not admitted (plan cleared, DisruptionTarget),
             write the preemptor's plan with the victims it awaits, then evict them;
             its pods are released by a later cycle, once the victims are gone;
- roll back: write the gang as not admitted (plan cleared, backoff), then evict its
             released pods;
- follow:    finish what an earlier cycle (or an operator since restarted) started;
- let go:    ungate the pods of a Job whose opt-in the API server dropped, then tell
             the Job why (see `let_go`): no gang holds them, so nothing is written.

Each event names its target (`EventTarget`): a gang's transitions are told on its
PodGroup, what became of a Job's pods on the Job; the operator only writes it.

Beside the steps, the plan's `notices`: warnings about single objects (a member pod
whose PodGroup is missing, an object the engine cannot use), each told once.

Every status a step writes is the group's whole desired status after the cycle
(`Plan.statuses`), computed from the version of the PodGroup it was read at; the
events that tell its transitions (`RecordEvent`) follow the first write of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from muster.api.constants import API_VERSION, POD_GROUP_KIND
from muster.api.keys import GroupKey, JobRef, PodKey
from muster.api.wire import JsonObject
from muster.scheduler.rules.node_affinity import Term


@dataclass(frozen=True, slots=True)
class WriteStatus:
    """Write the group's desired status (`Plan.statuses`); the steps after it need it."""

    group: GroupKey


@dataclass(frozen=True, slots=True)
class Evict:
    """Evict these pods; `force`: the engine decided they must go, so a pod whose
    eviction is refused (a PodDisruptionBudget, or any other refusal that stands) is
    deleted, since a gang taken down must not keep half its pods. Throttling and
    failures without an answer are never turned into a delete: they fail the step,
    and the next cycle asks again (after the server's Retry-After)."""

    pods: tuple[PodKey, ...]
    force: bool


@dataclass(frozen=True, slots=True)
class Release:
    """Remove the gang gate of each pod, pinning it to its planned node.

    The pin narrows the pod's own required node affinity terms, and the write
    replaces the list of terms whole, so the release carries them as the engine read
    the pod it decided on (`terms`: only pods that have some), and the operator needs
    nothing more to write it."""

    group: GroupKey
    placements: tuple[tuple[str, str], ...]  # (pod name, node name), sorted
    terms: tuple[tuple[str, tuple[Term, ...]], ...] = ()  # (pod name, its terms), sorted


@dataclass(frozen=True, slots=True)
class EventTarget:
    """The object an event is told on (its involvedObject).

    `uid` is given when the engine knows it (a Job's, from its pods' owner); without
    it the operator takes the uid from its copy of the object, and tells nothing once
    the object is gone."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def on_pod_group(group: GroupKey) -> EventTarget:
    """A gang's own object: `kubectl describe podgroup` shows why the gang waits or ran
    beside the condition that says so. Told there only, not on its Job too: told on
    both, every gang of a burst cost the API server one more write than its transition
    needs (the Job's `Created` event names the PodGroup)."""
    return EventTarget(API_VERSION, POD_GROUP_KIND, group.namespace, group.name)


def on_job(job: JobRef) -> EventTarget:
    """A Job, for what became of pods no gang holds."""
    return EventTarget("batch/v1", "Job", job.namespace, job.name, job.uid)


@dataclass(frozen=True, slots=True)
class RecordEvent:
    """Tell, as an Event on `target`, what the action before it did (a transition
    written, a Job's pods ungated); told only once that action succeeded."""

    target: EventTarget
    warning: bool
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Ungate:
    """Remove the gang gate of each pod and pin none: no gang holds them, and
    kube-scheduler places them as it places any pod."""

    pods: tuple[PodKey, ...]  # sorted


@dataclass(frozen=True, slots=True)
class Notice:
    """A Warning event on one object, which nothing else tells its owner about: the
    engine plans each once (see `muster.scheduler.cycle.notices`), after the steps.

    `version` is the resourceVersion told about, for an object the engine cannot
    use (each new version of it is told again); empty for a pod waiting for its
    PodGroup, told once while it waits."""

    kind: str
    namespace: str  # "" when cluster-scoped
    name: str
    version: str
    reason: str
    message: str


Action = WriteStatus | Evict | Release | RecordEvent | Ungate


class StepKind(StrEnum):
    ADMIT = "admit"
    PREEMPT = "preempt"
    GROW = "grow"
    FOLLOW = "follow"
    ROLL_BACK = "roll back"
    TAKE_DOWN = "take down"  # finishing a rollback or preemption already written
    RECORD = "record"  # a verdict or fresh counts: a status write only
    LET_GO = "let go"  # pods no gang will ever hold, ungated without a plan


@dataclass(frozen=True, slots=True)
class Step:
    """One gang's transition. `exclusive` steps (preemptions) run one after another,
    before the others; the others are independent of each other."""

    group: GroupKey
    kind: StepKind
    actions: tuple[Action, ...]
    exclusive: bool = False


@dataclass(frozen=True, slots=True)
class Plan:
    """The steps in order, each group's desired status and the version it was computed
    from, when the engine next wants a cycle even if nothing happens, and the notices
    to give once the steps are carried out."""

    steps: tuple[Step, ...] = ()
    statuses: dict[GroupKey, JsonObject] = field(default_factory=dict)
    versions: dict[GroupKey, str] = field(default_factory=dict)
    wake_at: float | None = None
    notices: tuple[Notice, ...] = ()
