"""Validating admission: PodGroups, Workloads and opted-in Jobs, by the pure rules
of :mod:`muster.api.validation`.

The API server has already checked the CRD schema and its CEL rules; these
handlers add what only a webhook can know (that a priority class exists, that a
new PodGroup's Workload and template exist, that a Job's opt-in can be honoured)
and refuse with every problem, each naming its field and value: as Invalid (422)
for what the object says, as Forbidden (403) for what it refers to. Each handler
is its own webhook, selected narrowly:

- ``validate-podgroups``: PodGroups, CREATE and UPDATE.
- ``validate-workloads``: Workloads, CREATE and UPDATE.
- ``validate-labelled-jobs``: Jobs with the label ``scheduling.muster.dev/policy``
  (an object selector), on UPDATE; on CREATE the gating webhook
  (:mod:`muster.webhooks.gating`) checks them with the same :func:`check_job`, in
  the one call a Job's creation costs. A labelled Job that also has the native
  ``spec.scheduling`` field is checked by the field (which wins), with a warning.

A Job with only the native field needs no webhook of Muster's: an API server that
keeps the field validates it itself (minCount against parallelism, the topology
key's syntax), and one that drops it drops it before validating admission. So no
webhook has to see every Job of the cluster.

The Job webhook ignores failures: an unreachable Muster must not stop a cluster's
Jobs from being changed; the operator reports an invalid opt-in on the Job as an
event anyway. (A labelled Job's creation waits on the gating webhook, which fails
closed: no gang Job may start ungated.)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import kopf

from muster.api.constants import GROUP, POD_GROUP_PLURAL, POLICY_LABEL, VERSION, WORKLOAD_PLURAL
from muster.api.features import ServedFeatures
from muster.api.optin import OptInError, read_job_opt_in
from muster.api.problems import Problem
from muster.api.references import is_forbidden
from muster.api.validation import (
    job_priority_class_problems,
    validate_job,
    validate_pod_group,
    validate_workload,
)
from muster.webhooks.advice import advise, node_label_keys
from muster.webhooks.priority import list_priority_classes
from muster.webhooks.workloads import reference_problems

# Where the operator puts what says the cluster's topology levels for admission (a
# Kueue Topology's, else `--topology-levels`): a preferred level must be one of them,
# when there are any.
TOPOLOGY_LEVELS_MEMO = "topology_levels"

# Where the operator puts what its API server serves (:mod:`muster.api.features`),
# so that what needs an API that is off is refused with the reason.
FEATURES_MEMO = "features"
EVERY_FEATURE = ServedFeatures()

# The status codes of refusals, as the API server answers: an invalid object, and
# one that refers to what may not be referred to.
INVALID = 422
FORBIDDEN = 403


def refuse(problems: list[Problem]) -> None:
    """Refuse the request naming every problem; do nothing when there is none.

    Forbidden when every problem is a forbidden reference, Invalid otherwise.
    """
    if problems:
        code = FORBIDDEN if all(is_forbidden(problem) for problem in problems) else INVALID
        raise kopf.AdmissionError("; ".join(str(problem) for problem in problems), code=code)


def label_ignored_warning(job: kopf.Body) -> str | None:
    """The warning for a Job whose native field overrides its opt-in label."""
    try:
        opt_in = read_job_opt_in(job)
    except OptInError:
        return None
    if opt_in is None or not opt_in.label_ignored:
        return None
    return (
        f"spec.scheduling takes precedence: the label {POLICY_LABEL} and its annotations"
        " are ignored"
    )


def check_pod_group(
    body: kopf.Body,
    old: kopf.Body | None,
    priority_class_names: Collection[str] | None,
    reference: list[Problem] | None = None,
    levels: Sequence[str] = (),
) -> None:
    """Refuse an invalid PodGroup, including one naming a missing PriorityClass
    (when the names are given: on creation only, as the class is looked up once,
    like a pod's; a class deleted later must not block updates such as the removal
    of a finalizer), and one whose ``workloadRef`` was found wanting (``reference``,
    looked up on creation only, for the same reason)."""
    exists = priority_class_names.__contains__ if priority_class_names is not None else None
    problems = validate_pod_group(
        body, old=old, priority_class_exists=exists, topology_levels=levels
    )
    refuse(sorted({*problems, *(reference or [])}))


def check_workload(body: kopf.Body, old: kopf.Body | None, levels: Sequence[str] = ()) -> None:
    refuse(validate_workload(body, old=old, topology_levels=levels))


def levels_of(memo: Any) -> tuple[str, ...]:
    """The cluster's topology levels, or none (then any label key may be preferred)."""
    levels: Callable[[], tuple[str, ...]] | None = getattr(memo, TOPOLOGY_LEVELS_MEMO, None)
    return () if levels is None else levels()


def features_of(memo: Any) -> ServedFeatures:
    """What the cluster serves, as the operator found at start (all, when not told)."""
    features: ServedFeatures | None = getattr(memo, FEATURES_MEMO, None)
    return EVERY_FEATURE if features is None else features


def check_job(
    body: kopf.Body,
    warnings: list[str],
    old: kopf.Body | None = None,
    levels: Sequence[str] = (),
) -> None:
    """Refuse a Job whose opt-in cannot be honoured; warn when the native field
    overrides the label."""
    warning = label_ignored_warning(body)
    if warning is not None:
        warnings.append(warning)
    refuse(validate_job(body, old=old, topology_levels=levels))


async def refuse_missing_priority_class(job: kopf.Body, memo: Any) -> None:
    """Refuse a new opted-in Job whose pods name a PriorityClass that does not exist
    (`job_priority_class_problems`): its PodGroup could not be made, and its pods
    would be refused one by one."""
    if not job_priority_class_problems(job, lambda _: False):
        return  # its pods name no class: nothing to look up
    names = {pc.get("metadata", {}).get("name") for pc in await list_priority_classes(memo)}
    refuse(job_priority_class_problems(job, names.__contains__))


@kopf.on.validate(
    GROUP,
    VERSION,
    POD_GROUP_PLURAL,
    id="validate-podgroups",
    operations=["CREATE", "UPDATE"],
    persistent=True,
)
async def validate_pod_group_admission(
    body: kopf.Body,
    memo: Any,
    warnings: list[str],
    namespace: str | None = None,
    old: kopf.Body | None = None,
    **_: Any,
) -> None:
    names = None
    reference = None
    if old is None:
        names = {pc.get("metadata", {}).get("name") for pc in await list_priority_classes(memo)}
        reference = await reference_problems(body, namespace or "", memo)
    check_pod_group(body, old, names, reference, levels_of(memo))
    advise(body, warnings, node_label_keys(memo))


@kopf.on.validate(
    GROUP,
    VERSION,
    WORKLOAD_PLURAL,
    id="validate-workloads",
    operations=["CREATE", "UPDATE"],
    persistent=True,
)
def validate_workload_admission(
    body: kopf.Body, memo: Any, warnings: list[str], old: kopf.Body | None = None, **_: Any
) -> None:
    check_workload(body, old, levels_of(memo))
    advise(body, warnings, node_label_keys(memo))


@kopf.on.validate(
    "batch",
    "v1",
    "jobs",
    id="validate-labelled-jobs",
    operations=["UPDATE"],
    labels={POLICY_LABEL: kopf.PRESENT},
    persistent=True,
    ignore_failures=True,
)
def validate_labelled_job_admission(
    body: kopf.Body, warnings: list[str], memo: Any, old: kopf.Body | None = None, **_: Any
) -> None:
    check_job(body, warnings, old, levels_of(memo))
    advise(body, warnings, node_label_keys(memo))
