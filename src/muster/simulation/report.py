"""What a simulation found: the fate of every PodGroup and every pod it preempted."""

from __future__ import annotations

from dataclasses import dataclass

from muster.api.keys import GroupKey, PodKey
from muster.simulation.documents import Problem


@dataclass(frozen=True, slots=True)
class GroupOutcome:
    """One PodGroup at the end of the run.

    `placements` holds only the pods this run placed (pod name -> node name); a gang
    admitted before the run (per its status) keeps its pods where they were and shows
    none. `preempted` says the gang was taken down during the run, whether or not it
    came back.
    """

    group: GroupKey
    scheduled: bool
    reason: str
    message: str
    placements: dict[str, str]
    preempted: bool


@dataclass(frozen=True, slots=True)
class PreemptedPod:
    """A pod removed to make room, with its PodGroup (None for a plain pod)."""

    pod: PodKey
    group: GroupKey | None


@dataclass(frozen=True, slots=True)
class Report:
    """Outcomes sorted by PodGroup; victims in the order they were preempted."""

    pod_groups: tuple[GroupOutcome, ...]
    victims: tuple[PreemptedPod, ...]
    warnings: tuple[Problem, ...]
    cycles: int
