"""Admission warnings: what each webhook adds, and the one about a dropped native field."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import kopf

from muster.api.advice import MAX_WARNING_LENGTH, MAX_WARNINGS
from muster.webhooks import gating, server, validation
from muster.webhooks.advice import (
    DROPPED_FIELD_WARNING,
    NODE_LABEL_KEYS_MEMO,
    WARN_DROPPED_FIELD_CONDITION,
    advise,
    dropped_field_warning,
    node_label_keys,
)

# The handlers as kopf calls them (their decorator types them as kopf's callback).
gate_job: Any = gating.gate_job
gate_native_job: Any = gating.gate_native_job
validate_workload_admission: Any = validation.validate_workload_admission

TYPO = "scheduling.muster.dev/topology-prefered"


def labelled_job(annotations: dict[str, str]) -> kopf.Body:
    return kopf.Body(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "j",
                "namespace": "ns",
                "uid": "u",
                "labels": {"scheduling.muster.dev/policy": "gang"},
                "annotations": annotations,
            },
            "spec": {"parallelism": 2, "template": {"spec": {"containers": []}}},
        }
    )


def stored_without_the_field() -> dict[str, Any]:
    """A native Job as validating admission sees it where the API server dropped the
    field: its template gated and marked by the gating webhook, the field gone."""
    job: dict[str, Any] = dict(labelled_job({}))  # a copy, its parts replaced below
    job["metadata"] = {**job["metadata"], "labels": {}}
    job["spec"] = {
        **job["spec"],
        "template": {
            "metadata": {
                "labels": {"scheduling.muster.dev/pod-group": "j"},
                "annotations": {"scheduling.muster.dev/gated-for": "spec.scheduling"},
            },
            "spec": {"schedulingGates": [{"name": "scheduling.muster.dev/gang"}]},
        },
    }
    return job


def memo(keys: frozenset[str] | None) -> SimpleNamespace:
    return SimpleNamespace(**{NODE_LABEL_KEYS_MEMO: lambda: keys})


async def test_the_gating_of_a_job_warns_of_a_typo_and_a_level_no_node_carries() -> None:
    warnings: list[str] = []
    job = labelled_job({TYPO: "rack", "scheduling.muster.dev/topology-key": "zon"})
    await cast(Any, gate_job)(job, kopf.Patch(), warnings, memo(frozenset({"zone"})))
    assert warnings == [
        f"unknown key {TYPO}: did you mean scheduling.muster.dev/topology-preferred?",
        "no node carries the topology key zon (did you mean zone?)",
    ]


async def test_no_topology_warning_while_the_nodes_are_not_known() -> None:
    warnings: list[str] = []
    job = labelled_job({"scheduling.muster.dev/topology-key": "zon"})
    await cast(Any, gate_job)(job, kopf.Patch(), warnings, memo(None))
    assert warnings == []
    assert node_label_keys(SimpleNamespace()) is None  # a memo without the keys at all


def test_a_native_job_and_a_workload_are_advised_too() -> None:
    warnings: list[str] = []
    native = dict(labelled_job({TYPO: "x"}))
    native["metadata"] = {**native["metadata"], "labels": {}}
    native["spec"] = {**native["spec"], "scheduling": {"schedulingPolicy": {"gang": {}}}}
    gate_native_job(native, kopf.Patch(), warnings, memo(frozenset()))
    assert len(warnings) == 1 and TYPO in warnings[0]
    workload = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w", "annotations": {TYPO: "x"}},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "j"},
            "podGroupTemplates": [
                {"name": "a", "schedulingPolicy": {"gang": {"minCount": 1}}},
            ],
        },
    }
    warnings = []
    validate_workload_admission(workload, memo(frozenset()), warnings)
    assert len(warnings) == 1 and TYPO in warnings[0]


def test_the_request_keeps_a_few_short_warnings_its_own_included() -> None:
    warnings = ["x" * 300]
    annotations = {f"scheduling.muster.dev/k{index}": "v" for index in range(50)}
    advise(labelled_job(annotations), warnings, None)
    assert len(warnings) == MAX_WARNINGS
    assert all(len(warning) <= MAX_WARNING_LENGTH for warning in warnings)


def test_a_job_stored_without_its_native_field_is_warned() -> None:
    assert len(DROPPED_FIELD_WARNING) <= MAX_WARNING_LENGTH
    assert dropped_field_warning(stored_without_the_field()) == DROPPED_FIELD_WARNING
    kept = stored_without_the_field()
    kept["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {}}}
    assert dropped_field_warning(kept) is None
    labelled = stored_without_the_field()  # the label makes it a gang all the same
    labelled["metadata"]["labels"] = {"scheduling.muster.dev/policy": "gang"}
    assert dropped_field_warning(labelled) is None
    assert dropped_field_warning(labelled_job({})) is None


def test_the_dropped_field_webhook_is_called_only_for_such_jobs_and_ignores_failures() -> None:
    built = {
        (configuration["kind"], webhook["name"]): webhook
        for configuration in server.webhook_configurations(
            server.webhook_handlers(kopf.get_default_registry()),
            name="m",
            where="https://h",
            ca_bundle=b"",
            group="g.dev",
        )
        for webhook in configuration["webhooks"]
    }
    webhook = built[(server.VALIDATING, "warn-dropped-field.g.dev")]
    assert webhook["failurePolicy"] == "Ignore"
    assert webhook["rules"][0]["resources"] == ["jobs"]
    assert webhook["rules"][0]["operations"] == ["CREATE"]
    assert webhook["matchConditions"] == [WARN_DROPPED_FIELD_CONDITION]
    assert "objectSelector" not in webhook
