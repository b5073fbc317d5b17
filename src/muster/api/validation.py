"""Validation of PodGroups, Workloads and opted-in Jobs, without an API server.

Three layers, each returning problems rather than raising:

1. the generated CRD schema, checked with `jsonschema` (types, required fields,
   enums, sizes; unknown fields too, as `kubectl apply` rejects them);
2. the CEL rules of the schema, run through their Python twins
   (:mod:`muster.api.rules`), transition rules included when the old object is
   given;
3. what only an admission webhook can check: a Job's opt-in, the names
   PodGroups will get, and (given a way to look them up) that a priority class
   exists and that a new PodGroup's ``workloadRef`` names a Workload and
   template that exist (:mod:`muster.api.references`).

`muster validate` runs all three, with Workloads looked up among its input; the
webhooks run them on what the API server admits, with priority classes and
Workloads looked up in the cluster.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from typing import Any

import jsonschema

from muster.api.constants import GROUP, POD_GROUP_KIND, WORKLOAD_KIND
from muster.api.crdgen import custom_resource_definitions
from muster.api.optin import OptInError, carries_opt_in, read_job_opt_in
from muster.api.preferences import preference_problems
from muster.api.priority import priority_class_not_found
from muster.api.problems import Problem, join_path
from muster.api.references import WorkloadLookup, workload_ref_problems
from muster.api.rules import rule_for
from muster.api.slices import GangShape, slice_problems

PriorityClassLookup = Callable[[str], bool]
"""Answers whether a PriorityClass of that name exists."""


def validate_pod_group(
    pod_group: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None = None,
    priority_class_exists: PriorityClassLookup | None = None,
    workloads: WorkloadLookup | None = None,
    topology_levels: Sequence[str] = (),
) -> list[Problem]:
    """Every problem of a PodGroup; ``old`` enables the immutability rules,
    ``workloads`` the check of a new group's ``workloadRef`` (as the API server
    asks admission only about objects its schema accepts, only then), and
    ``topology_levels`` (the operator's) the check of a preferred level against them."""
    problems = _schema_and_rules(POD_GROUP_KIND, pod_group, old)
    problems.extend(preference_problems(pod_group, topology_levels, old))
    problems.extend(slice_problems(pod_group, [_gang_of(pod_group)], topology_levels, old))
    if workloads is not None and old is None and not problems:
        problems.extend(workload_ref_problems(pod_group, workloads))
    spec = pod_group.get("spec")
    class_name = spec.get("priorityClassName") if isinstance(spec, Mapping) else None
    if (
        priority_class_exists is not None
        and isinstance(class_name, str)
        and not priority_class_exists(class_name)
    ):
        problems.append(priority_class_not_found(class_name))
    return problems


def schema_problems(kind: str, manifest: Mapping[str, Any]) -> list[Problem]:
    """What the API server's schema check of a new object (its CRD schema and CEL
    rules) finds, and nothing that only admission checks."""
    return _schema_and_rules(kind, manifest, None)


def validate_workload(
    workload: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None = None,
    topology_levels: Sequence[str] = (),
) -> list[Problem]:
    """Every problem of a Workload (the names of the PodGroups it makes included: a
    CEL rule of its schema checks them; and the preferred topology level)."""
    problems = _schema_and_rules(WORKLOAD_KIND, workload, old)
    problems.extend(preference_problems(workload, topology_levels, old))
    return problems + slice_problems(workload, _templates_of(workload), topology_levels, old)


def validate_job(
    job: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None = None,
    topology_levels: Sequence[str] = (),
) -> list[Problem]:
    """The problems of a Job's opt-in (none for a Job that has not opted in)."""
    try:
        opt_in = read_job_opt_in(job)
    except OptInError as error:
        return list(error.problems) + preference_problems(job, topology_levels, old)
    if opt_in is None:
        return []
    gang = GangShape(opt_in.min_count, opt_in.topology_key, "the Job")
    problems = preference_problems(job, topology_levels, old)
    return problems + slice_problems(job, [gang], topology_levels, old)


JOB_PRIORITY_CLASS = "spec.template.spec.priorityClassName"


def job_priority_class_problems(
    job: Mapping[str, Any], priority_class_exists: PriorityClassLookup
) -> list[Problem]:
    """Whether the PriorityClass an opted-in Job's pods name exists: its PodGroup gets
    that class (`muster.api.expand.expand_job`), and a PodGroup naming a class that does
    not exist is refused, as the API server refuses the Job's pods. Checked when the
    Job is created, like a pod's class, and only with the cluster's classes at hand."""
    if not carries_opt_in(job):
        return []
    spec = job.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    pod_spec = template.get("spec") if isinstance(template, Mapping) else None
    name = pod_spec.get("priorityClassName") if isinstance(pod_spec, Mapping) else None
    if not isinstance(name, str) or not name or priority_class_exists(name):
        return []
    return [priority_class_not_found(name, JOB_PRIORITY_CLASS)]


def validate_object(
    manifest: Mapping[str, Any],
    *,
    workloads: WorkloadLookup | None = None,
    topology_levels: Sequence[str] = (),
) -> list[Problem]:
    """Every problem of any manifest Muster has an opinion about; other kinds of
    objects have none. ``workloads`` resolves a PodGroup's ``workloadRef``;
    ``topology_levels`` are the levels a preferred one must be among (if any)."""
    api_version = manifest.get("apiVersion")
    kind = manifest.get("kind")
    levels = topology_levels
    if api_version == "batch/v1" and kind == "Job":
        return validate_job(manifest, topology_levels=levels)
    if not isinstance(api_version, str) or api_version.split("/")[0] != GROUP:
        return []
    if kind == POD_GROUP_KIND:
        return validate_pod_group(manifest, workloads=workloads, topology_levels=levels)
    if kind == WORKLOAD_KIND:
        return validate_workload(manifest, topology_levels=levels)
    return [Problem("kind", f"unknown kind {json.dumps(kind)} in {GROUP}")]


def required_keys(manifest: Mapping[str, Any]) -> list[str]:
    """The required topology keys a PodGroup or a Workload's templates name."""
    kind = manifest.get("kind")
    gangs = _templates_of(manifest) if kind == WORKLOAD_KIND else [_gang_of(manifest)]
    return [gang.required for gang in gangs if gang.required is not None]


def _gang_of(template: Mapping[str, Any], where: str = "the gang") -> GangShape:
    """The minCount and required key of a PodGroup's spec or a Workload's template
    (what is malformed the schema reports; here it is only absent)."""
    spec = template.get("spec", template)
    spec = spec if isinstance(spec, Mapping) else {}
    policy = spec.get("schedulingPolicy")
    gang = policy.get("gang") if isinstance(policy, Mapping) else None
    min_count = gang.get("minCount") if isinstance(gang, Mapping) else None
    constraints = spec.get("schedulingConstraints")
    topology = constraints.get("topology") if isinstance(constraints, Mapping) else None
    first = topology[0] if isinstance(topology, list) and topology else None
    key = first.get("key") if isinstance(first, Mapping) else None
    return GangShape(
        min_count if isinstance(min_count, int) and min_count > 0 else None,
        key if isinstance(key, str) else None,
        where,
    )


def _templates_of(workload: Mapping[str, Any]) -> list[GangShape]:
    spec = workload.get("spec")
    templates = spec.get("podGroupTemplates") if isinstance(spec, Mapping) else None
    return [
        _gang_of(template, f"template {template.get('name')}")
        for template in (templates if isinstance(templates, list) else [])
        if isinstance(template, Mapping)
    ]


def _schema_and_rules(
    kind: str, manifest: Mapping[str, Any], old: Mapping[str, Any] | None
) -> list[Problem]:
    # A mapping that is not a dict (kopf's Body) is an object all the same.
    problems = list(_schema_problems(_validator(kind), dict(manifest)))
    if not isinstance(_name(manifest), str):
        problems.append(Problem("metadata.name", "Required value"))
    problems.extend(_rule_problems(_schemas()[kind], manifest, old, ""))
    return sorted(set(problems))


@cache
def _schemas() -> dict[str, dict[str, Any]]:
    """Each kind's schema, made strict about unknown fields."""
    schemas = {}
    for crd in custom_resource_definitions():
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        strict = {**schema, "properties": {**schema["properties"]}}
        for name in ("spec", "status"):
            if name in strict["properties"]:
                strict["properties"][name] = _closed(strict["properties"][name])
        schemas[crd["spec"]["names"]["kind"]] = strict
    return schemas


@cache
def _validator(kind: str) -> jsonschema.Draft7Validator:
    """One compiled validator per kind: the webhooks validate on every request."""
    return jsonschema.Draft7Validator(_schemas()[kind])


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every object closed to fields it does not declare."""
    closed = dict(schema)
    if "properties" in closed:
        closed["properties"] = {
            name: _closed(child) for name, child in closed["properties"].items()
        }
    if "items" in closed:
        closed["items"] = _closed(closed["items"])
    if closed.get("type") == "object" and "additionalProperties" not in closed:
        closed["additionalProperties"] = False
    return closed


def _schema_problems(
    validator: jsonschema.Draft7Validator, manifest: Mapping[str, Any]
) -> Iterator[Problem]:
    for error in validator.iter_errors(manifest):
        path = _path(error.absolute_path)
        instance = error.instance
        if error.validator == "required":
            for field in error.validator_value:
                if isinstance(instance, Mapping) and field not in instance:
                    yield Problem(join_path(path, field), "Required value")
        elif error.validator == "additionalProperties":
            declared = error.schema.get("properties", {})
            for field in instance:
                if field not in declared:
                    yield Problem(join_path(path, field), "unknown field")
        else:
            yield Problem(path, _schema_message(error.validator, error.validator_value, instance))


def _schema_message(validator: Any, expected: Any, instance: Any) -> str:
    """The API server's wording for the common schema violations."""
    value = json.dumps(instance)
    if validator == "type":
        return f"Invalid value: {value}: must be of type {expected}"
    if validator == "enum":
        allowed = ", ".join(json.dumps(choice) for choice in expected)
        return f"Unsupported value: {value}: supported values: {allowed}"
    if validator == "maxItems":
        items = "item" if expected == 1 else "items"
        return f"Too many: {len(instance)}: must have at most {expected} {items}"
    if validator == "minItems":
        return f"Invalid value: {len(instance)}: must have at least {expected} items"
    if validator == "maxLength":
        return f"Too long: may not be more than {expected} bytes"
    return f"Invalid value: {value}: {validator} {json.dumps(expected)}"


def _rule_problems(schema: Mapping[str, Any], value: Any, old: Any, path: str) -> Iterator[Problem]:
    """Run the Python twin of every CEL rule on the node it is attached to."""
    for entry in schema.get("x-kubernetes-validations", []):
        rule = rule_for(entry)
        holds = True
        if rule.check is not None:
            holds = rule.check(value)
        elif rule.check_update is not None and old is not None:
            holds = rule.check_update(value, old)
        if not holds:
            yield Problem(join_path(path, (rule.field_path or "").lstrip(".")), rule.message)
    if isinstance(value, Mapping):
        for name, child_schema in schema.get("properties", {}).items():
            if name in value:
                old_child = old.get(name) if isinstance(old, Mapping) else None
                yield from _rule_problems(
                    child_schema, value[name], old_child, join_path(path, name)
                )
    elif isinstance(value, list) and "items" in schema:
        yield from _duplicate_keys(schema, value, path)
        old_items = _correlate(schema, value, old)
        for index, item in enumerate(value):
            yield from _rule_problems(schema["items"], item, old_items[index], f"{path}[{index}]")


def _duplicate_keys(schema: Mapping[str, Any], items: list[Any], path: str) -> Iterator[Problem]:
    """A map list's items must have distinct keys; the API server names each repeat."""
    keys = schema.get("x-kubernetes-list-map-keys")
    if schema.get("x-kubernetes-list-type") != "map" or not keys:
        return
    seen: set[str] = set()
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        key = json.dumps({name: item.get(name) for name in keys}, separators=(",", ":"))
        if key in seen:
            yield Problem(f"{path}[{index}]", f"Duplicate value: {key}")
        seen.add(key)


def _correlate(schema: Mapping[str, Any], items: list[Any], old: Any) -> list[Any]:
    """The old counterpart of each item, as the API server pairs them: by key in a
    map list, and not at all in other lists."""
    keys = schema.get("x-kubernetes-list-map-keys")
    if schema.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(old, list):
        return [None] * len(items)

    def key_of(item: Any) -> tuple[Any, ...] | None:
        return tuple(item.get(key) for key in keys) if isinstance(item, Mapping) else None

    by_key = {key_of(item): item for item in old}
    return [by_key.get(key_of(item)) for item in items]


def _path(parts: Any) -> str:
    path = ""
    for part in parts:
        path = join_path(path, f"[{part}]" if isinstance(part, int) else str(part))
    return path


def _name(manifest: Mapping[str, Any]) -> Any:
    metadata = manifest.get("metadata")
    return metadata.get("name") if isinstance(metadata, Mapping) else None
