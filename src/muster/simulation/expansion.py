"""Jobs and Workloads turned into what the cluster would hold once Muster and the Job
controller have seen them: PodGroups, and the Jobs' gated pods.

The objects themselves come from `muster.api.expand`, the functions the operator
uses, so a simulated Job expands exactly as a real one. What is added here is what a
cluster adds around them: creation times, and the pods the Job controller creates.
Objects the input already holds (a PodGroup written by the operator, a Job's running
pods) are kept and not made again, so a dump of a live cluster simulates as it is.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from muster.api.constants import COMPLETION_INDEX_KEY, POLICY_LABEL
from muster.api.expand import expand_job, expand_workload, gated_pod_template
from muster.api.gates import pod_group_name
from muster.api.optin import OptInError, read_job_opt_in
from muster.api.wire import FINISHED_PHASES, controller_name
from muster.api.workload import Workload
from muster.simulation.documents import InvalidInputError, Problem
from muster.simulation.inventory import Entry, Inventory, Manifest


@dataclass(slots=True)
class Expansion:
    """Every PodGroup and pod the simulation starts from, input ones first."""

    pod_groups: list[Entry] = field(default_factory=list)
    pods: list[Entry] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


def expand(inventory: Inventory) -> Expansion:
    """Add the PodGroups of Workloads and Jobs, and the pods of Jobs, to the input's own.

    Raises `InvalidInputError` for a Job whose opt-in cannot be honoured or a Workload
    that is not valid, each problem naming the document.
    """
    expansion = Expansion(pod_groups=list(inventory.pod_groups), pods=list(inventory.pods))
    problems: list[Problem] = []
    group_names = {(entry.namespace, entry.name) for entry in inventory.pod_groups}
    for workload in inventory.workloads:
        for pod_group in _workload_pod_groups(workload, problems):
            _add_pod_group(expansion, group_names, Entry(workload.origin, pod_group))
    pod_names: dict[str, set[str]] = defaultdict(set)
    pods_of_job: dict[tuple[str, str], list[Manifest]] = defaultdict(list)
    for pod in inventory.pods:
        pod_names[pod.namespace].add(pod.name)
        job_name = controller_name(pod.body, "Job")
        if job_name is not None:
            pods_of_job[pod.namespace, job_name].append(pod.body)
    for job in inventory.jobs:
        count = _pods_to_create(job, pods_of_job[job.namespace, job.name], problems)
        if count is not None:
            _expand_job(
                job,
                count=count,
                expansion=expansion,
                group_names=group_names,
                taken=pod_names[job.namespace],
                problems=problems,
            )
    expansion.warnings.extend(_orphans(expansion.pods, group_names))
    if problems:
        raise InvalidInputError(problems)
    return expansion


def _orphans(pods: list[Entry], group_names: set[tuple[str, str]]) -> list[Problem]:
    """Pods labelled for a PodGroup the input lacks: nothing would ever release them."""
    warnings = []
    for pod in pods:
        group = pod_group_name(pod.body)
        if group is not None and (pod.namespace, group) not in group_names:
            warnings.append(
                Problem(pod.origin, f"Pod {pod.name}: PodGroup {group} is not in the input")
            )
    return warnings


def _workload_pod_groups(workload: Entry, problems: list[Problem]) -> list[Manifest]:
    """A user's Workload's PodGroups; a Job's Workload is left to the Job's expansion."""
    try:
        model = Workload.from_manifest(workload.body)
    except ValidationError as error:
        problems.append(Problem(workload.origin, f"Workload {workload.name}: {_first(error)}"))
        return []
    if model.spec.controller_ref is not None and model.spec.controller_ref.kind == "Job":
        return []
    pod_groups = expand_workload(workload.body)
    for pod_group in pod_groups:
        _inherit_creation(pod_group, workload.body)
    return pod_groups


def _expand_job(
    job: Entry,
    *,
    count: int,
    expansion: Expansion,
    group_names: set[tuple[str, str]],
    taken: set[str],
    problems: list[Problem],
) -> None:
    """Add the Job's PodGroup and `count` new pods, named apart from those in `taken`."""
    try:
        opt_in = read_job_opt_in(job.body)
    except OptInError as error:
        problems.append(Problem(job.origin, f"Job {job.name}: {error}"))
        return
    if opt_in is None:
        expansion.warnings.append(
            Problem(job.origin, f"Job {job.name} has no {POLICY_LABEL} label; ignored")
        )
        return
    pod_group = expand_job(job.body, opt_in).pod_group
    _inherit_creation(pod_group, job.body)
    _add_pod_group(expansion, group_names, Entry(job.origin, pod_group))
    template = gated_pod_template(job.body, opt_in)
    owner_references = pod_group["metadata"]["ownerReferences"]
    for index, name in _free_names(job.name, taken, count):
        taken.add(name)
        pod = _pod(name, job, template, owner_references)
        if (job.body.get("spec") or {}).get("completionMode") == "Indexed":
            _index(pod, index)
        expansion.pods.append(Entry(job.origin, pod))


def _pods_to_create(job: Entry, owned: list[Manifest], problems: list[Problem]) -> int | None:
    """How many pods the Job controller would create now, or None if the Job is invalid.

    As the controller does: `parallelism` at once, never more than the completions
    still missing, minus the Job's pods that are already active; none while suspended.
    """
    spec = job.body.get("spec") or {}
    try:
        parallelism = _count(spec, "parallelism", default=1)
        completions = _count(spec, "completions", default=None)
    except ValueError as error:
        problems.append(Problem(job.origin, f"Job {job.name}: {error}"))
        return None
    if spec.get("suspend") is True:
        return 0
    phases = [(pod.get("status") or {}).get("phase") for pod in owned]
    active = sum(phase not in FINISHED_PHASES for phase in phases)
    wanted = 1 if parallelism is None else parallelism
    if completions is not None:
        wanted = min(wanted, completions - phases.count("Succeeded"))
    return max(0, wanted - active)


def _count(spec: Mapping[str, Any], field_name: str, default: int | None) -> int | None:
    value = spec.get(field_name, default)
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise ValueError(f"spec.{field_name}: {value!r} is not a count")


def _add_pod_group(expansion: Expansion, group_names: set[tuple[str, str]], entry: Entry) -> None:
    """Keep the input's PodGroup when one of that name exists: the operator wrote it."""
    if (entry.namespace, entry.name) not in group_names:
        group_names.add((entry.namespace, entry.name))
        expansion.pod_groups.append(entry)


def _free_names(job_name: str, taken: set[str], count: int) -> list[tuple[int, str]]:
    """`<job>-<index>` for the lowest indexes not taken, with the index: deterministic,
    unlike the random suffixes of a real Job controller, so reports can be compared."""
    names: list[tuple[int, str]] = []
    index = 0
    while len(names) < count:
        name = f"{job_name}-{index}"
        if name not in taken:
            names.append((index, name))
        index += 1
    return names


def _index(pod: Manifest, index: int) -> None:
    """An Indexed Job's pod carries its completion index, as label and annotation."""
    metadata = pod["metadata"]
    for field_name in ("labels", "annotations"):
        metadata[field_name] = {
            **(metadata.get(field_name) or {}),
            COMPLETION_INDEX_KEY: str(index),
        }


def _pod(
    name: str, job: Entry, template: Mapping[str, Any], owner_references: list[Any]
) -> Manifest:
    metadata = copy.deepcopy(dict(template.get("metadata") or {}))
    metadata.update(
        name=name, namespace=job.namespace, ownerReferences=copy.deepcopy(owner_references)
    )
    created = job.body["metadata"].get("creationTimestamp")
    if created is not None:
        metadata["creationTimestamp"] = created
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy.deepcopy(dict(template.get("spec") or {})),
        "status": {"phase": "Pending"},
    }


def _inherit_creation(child: Manifest, owner: Manifest) -> None:
    """A child created by the operator is as old as its owner, for the queue's order."""
    created = owner["metadata"].get("creationTimestamp")
    if created is not None:
        child["metadata"]["creationTimestamp"] = created


def _first(error: ValidationError) -> str:
    """The first problem pydantic found, as `field.path: message`."""
    detail = error.errors()[0]
    path = ".".join(str(part) for part in detail["loc"])
    return f"{path}: {detail['msg']}" if path else str(detail["msg"])
