"""A Job's opt-in to Muster, read from either of its two spellings.

Users opt a Job in with the label ``scheduling.muster.dev/policy`` (plus optional
annotations), or with the native Kubernetes 1.37 field ``spec.scheduling``. Both
yield the same :class:`JobOptIn`, so the operator, the webhooks and the simulator
treat the two alike. When both are present the field wins, and the result says
so, so that the operator can warn the user that the label was ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from muster.api.constants import (
    DISRUPTION_ALL,
    DISRUPTION_MODE_ANNOTATION,
    DISRUPTION_SINGLE,
    EXPECTED_RUNTIME_ANNOTATION,
    MAX_GANG_SIZE,
    MIN_COUNT_ANNOTATION,
    POLICY_BASIC,
    POLICY_GANG,
    POLICY_LABEL,
    TOPOLOGY_KEY_ANNOTATION,
)
from muster.api.durations import DURATION_EXAMPLES, parse_duration
from muster.api.names import is_label_key
from muster.api.problems import Problem, shown

Policy = Literal["basic", "gang"]
DisruptionModeName = Literal["single", "all"]
OptInSource = Literal["label", "field"]

_Choice = TypeVar("_Choice", bound=str)

_POLICIES: tuple[Policy, ...] = (POLICY_BASIC, POLICY_GANG)
_DISRUPTION_MODES: tuple[DisruptionModeName, ...] = (DISRUPTION_SINGLE, DISRUPTION_ALL)

_FIELD = "spec.scheduling"
_POLICY_FIELD = f"{_FIELD}.schedulingPolicy"
_MIN_COUNT_FIELD = f"{_POLICY_FIELD}.gang.minCount"
_TOPOLOGY_FIELD = f"{_FIELD}.schedulingConstraints.topology"
_DISRUPTION_FIELD = f"{_FIELD}.disruptionMode"


@dataclass(frozen=True, slots=True)
class JobOptIn:
    """How a Job asked to be scheduled.

    ``min_count`` is set for gangs only (defaulted to the Job's parallelism).
    ``label_ignored`` is true when the Job carries the opt-in label too, but the
    native field took precedence.
    """

    policy: Policy
    min_count: int | None
    topology_key: str | None
    disruption_mode: DisruptionModeName | None
    source: OptInSource
    label_ignored: bool = False

    @property
    def is_gang(self) -> bool:
        """Whether the Job's pods are held back until the whole gang fits."""
        return self.policy == POLICY_GANG


class OptInError(ValueError):
    """The Job opts in, but its opt-in cannot be honoured as written."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(problem) for problem in problems))
        self.problems = problems


def carries_opt_in(job: Mapping[str, Any]) -> bool:
    """Cheaply: whether a Job carries either spelling of the opt-in (the parser judges it)."""
    labels = _mapping(_mapping(job.get("metadata")).get("labels"))
    scheduling = _mapping(_mapping(job.get("spec")).get("scheduling"))
    return POLICY_LABEL in labels or "schedulingPolicy" in scheduling


def read_job_opt_in(job: Mapping[str, Any]) -> JobOptIn | None:
    """The Job's opt-in, or None when it has not opted in.

    Raises :class:`OptInError` naming every offending field and value.
    """
    spec = _mapping(job.get("spec"))
    scheduling = _mapping(spec.get("scheduling"))
    labels = _mapping(_mapping(job.get("metadata")).get("labels"))
    has_label = POLICY_LABEL in labels
    problems: list[Problem] = []
    if "schedulingPolicy" in scheduling:
        opt_in = _from_field(scheduling, spec, problems, label_ignored=has_label)
    elif has_label:
        opt_in = _from_label(job, spec, problems)
    else:
        return None
    _check_expected_runtime(job, problems)
    if problems or opt_in is None:
        raise OptInError(problems)
    return opt_in


def _check_expected_runtime(job: Mapping[str, Any], problems: list[Problem]) -> None:
    """A runtime the Job declares must read as one: a typo would leave its gang's
    start-time estimates without it, in silence."""
    annotations = _mapping(_mapping(job.get("metadata")).get("annotations"))
    if EXPECTED_RUNTIME_ANNOTATION in annotations:
        value = annotations[EXPECTED_RUNTIME_ANNOTATION]
        if not isinstance(value, str) or parse_duration(value) is None:
            path = f"metadata.annotations[{EXPECTED_RUNTIME_ANNOTATION}]"
            problems.append(Problem(path, f'"{shown(str(value))}" is not {DURATION_EXAMPLES}'))


def _from_label(
    job: Mapping[str, Any], spec: Mapping[str, Any], problems: list[Problem]
) -> JobOptIn | None:
    metadata = _mapping(job.get("metadata"))
    labels = _mapping(metadata.get("labels"))
    annotations = _mapping(metadata.get("annotations"))
    policy_value = labels[POLICY_LABEL]
    policy = _choice(
        policy_value, _POLICIES, f"metadata.labels[{POLICY_LABEL}]", "a policy", problems
    )

    min_count: int | None = None
    min_count_path = f"metadata.annotations[{MIN_COUNT_ANNOTATION}]"
    if MIN_COUNT_ANNOTATION in annotations:
        raw = annotations[MIN_COUNT_ANNOTATION]
        if policy == POLICY_BASIC:
            problems.append(Problem(min_count_path, "applies to policy gang only, not basic"))
        else:
            min_count = _annotation_int(raw, min_count_path, problems)
    if policy == POLICY_GANG:
        min_count = _gang_size(min_count, spec, min_count_path, problems)

    topology_key: str | None = None
    if TOPOLOGY_KEY_ANNOTATION in annotations:
        topology_key = _label_key(
            annotations[TOPOLOGY_KEY_ANNOTATION],
            f"metadata.annotations[{TOPOLOGY_KEY_ANNOTATION}]",
            problems,
        )

    disruption_mode: DisruptionModeName | None = None
    if DISRUPTION_MODE_ANNOTATION in annotations:
        disruption_mode = _choice(
            annotations[DISRUPTION_MODE_ANNOTATION],
            _DISRUPTION_MODES,
            f"metadata.annotations[{DISRUPTION_MODE_ANNOTATION}]",
            "a disruption mode",
            problems,
        )
    if policy is None:
        return None
    return JobOptIn(policy, min_count, topology_key, disruption_mode, source="label")


def _from_field(
    scheduling: Mapping[str, Any],
    spec: Mapping[str, Any],
    problems: list[Problem],
    *,
    label_ignored: bool,
) -> JobOptIn | None:
    policy_spec = scheduling.get("schedulingPolicy")
    chosen = [
        name for name in _POLICIES if isinstance(policy_spec, Mapping) and name in policy_spec
    ]
    if len(chosen) != 1:
        problems.append(Problem(_POLICY_FIELD, "exactly one of basic or gang must be set"))
        return None
    policy = chosen[0]

    min_count: int | None = None
    if policy == POLICY_GANG:
        gang = _mapping(_mapping(policy_spec).get("gang"))
        if "minCount" in gang:
            min_count = _field_int(gang["minCount"], _MIN_COUNT_FIELD, problems)
        min_count = _gang_size(min_count, spec, _MIN_COUNT_FIELD, problems)

    topology_key: str | None = None
    constraints = _mapping(scheduling.get("schedulingConstraints"))
    topology = constraints.get("topology")
    if isinstance(topology, list) and len(topology) > 1:
        problems.append(
            Problem(_TOPOLOGY_FIELD, f"{len(topology)} constraints given, at most 1 is supported")
        )
    elif isinstance(topology, list) and topology:
        key = _mapping(topology[0]).get("key")
        topology_key = _label_key(key, f"{_TOPOLOGY_FIELD}[0].key", problems)

    disruption_mode: DisruptionModeName | None = None
    if "disruptionMode" in scheduling:
        mode = scheduling["disruptionMode"]
        modes = [name for name in _DISRUPTION_MODES if isinstance(mode, Mapping) and name in mode]
        if len(modes) == 1:
            disruption_mode = modes[0]
        else:
            problems.append(Problem(_DISRUPTION_FIELD, "exactly one of single or all must be set"))

    return JobOptIn(
        policy,
        min_count,
        topology_key,
        disruption_mode,
        source="field",
        label_ignored=label_ignored,
    )


def _gang_size(
    min_count: int | None, spec: Mapping[str, Any], path: str, problems: list[Problem]
) -> int | None:
    """Default minCount to the number of pods the Job runs at once (its parallelism,
    or fewer when it has fewer completions), and check a given minCount against
    it: a gang larger than that would wait forever."""
    parallelism = spec.get("parallelism", 1)
    completions = spec.get("completions")
    if not isinstance(parallelism, int):
        return min_count
    if parallelism > MAX_GANG_SIZE:
        problems.append(
            Problem(
                "spec.parallelism",
                f"{parallelism} exceeds {MAX_GANG_SIZE}, the largest gang Muster schedules:"
                " a gang's plan is kept in its PodGroup's status, which must fit in an"
                " etcd object",
            )
        )
    if min_count is None:
        at_once = min(parallelism, completions) if isinstance(completions, int) else parallelism
        return max(at_once, 1)
    if min_count < 1:
        problems.append(Problem(path, f"{min_count} must be at least 1"))
    elif min_count > parallelism:
        problems.append(Problem(path, f"{min_count} exceeds spec.parallelism {parallelism}"))
    elif isinstance(completions, int) and min_count > completions:
        problems.append(Problem(path, f"{min_count} exceeds spec.completions {completions}"))
    return min_count


def _annotation_int(raw: Any, path: str, problems: list[Problem]) -> int | None:
    try:
        return int(str(raw).strip(), 10)
    except ValueError:
        problems.append(Problem(path, f"{json.dumps(raw)} is not an integer"))
        return None


def _field_int(raw: Any, path: str, problems: list[Problem]) -> int | None:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    problems.append(Problem(path, f"{json.dumps(raw)} is not an integer"))
    return None


def _label_key(raw: Any, path: str, problems: list[Problem]) -> str | None:
    if isinstance(raw, str) and is_label_key(raw):
        return raw
    problems.append(Problem(path, f"{json.dumps(raw)} is not a valid label key"))
    return None


def _choice(
    raw: Any, choices: tuple[_Choice, ...], path: str, what: str, problems: list[Problem]
) -> _Choice | None:
    for choice in choices:
        if raw == choice:
            return choice
    allowed = " or ".join(choices)
    problems.append(Problem(path, f"{json.dumps(raw)} is not {what}: must be {allowed}"))
    return None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
