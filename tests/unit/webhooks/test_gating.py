"""Mutating admission: opted-in Job templates and member pods are born gated."""

from __future__ import annotations

from typing import Any, cast

import kopf
import pytest

from muster.api.constants import BYPASSED_ANNOTATION
from muster.api.features import ServedFeatures
from muster.webhooks.gating import (
    bypass_warning,
    bypasses_gang,
    gate_labelled_job,
    gate_member_pod,
    job_template,
    pod_gates,
)

GATE = {"name": "scheduling.muster.dev/gang"}
GROUP_LABEL = "scheduling.muster.dev/pod-group"


def job(labels: dict[str, str], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "train", "labels": labels, "annotations": annotations or {}},
        "spec": {
            "parallelism": 4,
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": []}},
        },
    }


def test_a_gang_job_template_gets_the_label_and_the_gate() -> None:
    template = job_template(job({"scheduling.muster.dev/policy": "gang"}))
    assert template is not None
    assert template["metadata"]["labels"] == {"app": "x", GROUP_LABEL: "train"}
    assert template["spec"]["schedulingGates"] == [GATE]


def test_a_labelled_job_is_refused_by_its_gating_when_its_opt_in_is_invalid() -> None:
    """Its creation's one webhook call validates it too, naming the field."""
    bad = job({"scheduling.muster.dev/policy": "gang"}, {"scheduling.muster.dev/min-count": "9"})
    patch = kopf.Patch()
    with pytest.raises(kopf.AdmissionError, match=r"9 exceeds spec\.parallelism 4"):
        gate_labelled_job(kopf.Body(cast(Any, bad)), patch, [], ())
    assert not patch
    good = job({"scheduling.muster.dev/policy": "gang"})
    gate_labelled_job(kopf.Body(cast(Any, good)), patch, [], ())
    assert patch["spec"]["template"]["spec"]["schedulingGates"] == [GATE]


def test_a_basic_job_template_is_labelled_but_never_held() -> None:
    template = job_template(job({"scheduling.muster.dev/policy": "basic"}))
    assert template is not None
    assert template["metadata"]["labels"][GROUP_LABEL] == "train"
    assert "schedulingGates" not in template["spec"]


def test_jobs_that_are_not_opted_in_or_invalid_are_left_alone() -> None:
    assert job_template(job({})) is None
    bad = job({"scheduling.muster.dev/policy": "gang"}, {"scheduling.muster.dev/min-count": "x"})
    assert job_template(bad) is None


def test_an_already_gated_template_needs_no_change() -> None:
    opted_in = job({"scheduling.muster.dev/policy": "gang"})
    template = job_template(opted_in)
    assert template is not None
    opted_in["spec"]["template"] = template
    assert job_template(opted_in) is None


def pod(labels: dict[str, str], owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels, "ownerReferences": owners or []},
        "spec": {"schedulingGates": [{"name": "other/gate"}]},
    }


def test_a_member_pod_gets_the_gate_beside_its_own() -> None:
    assert pod_gates(pod({GROUP_LABEL: "g"})) == [{"name": "other/gate"}, GATE]


def test_pods_of_jobs_and_non_members_are_left_alone() -> None:
    job_owner = {"kind": "Job", "name": "train", "controller": True}
    assert pod_gates(pod({GROUP_LABEL: "g"}, [job_owner])) is None
    assert pod_gates(pod({})) is None
    gated = pod({GROUP_LABEL: "g"})
    gated["spec"]["schedulingGates"].append(GATE)
    assert pod_gates(gated) is None


def test_a_pod_taken_by_native_gang_scheduling_loses_our_gate() -> None:
    native = pod({GROUP_LABEL: "g"}, [{"kind": "Job", "name": "train", "controller": True}])
    native["spec"]["schedulingGroup"] = {"podGroupName": "train-pg"}
    native["spec"]["schedulingGates"].append(GATE)
    assert pod_gates(native) == [{"name": "other/gate"}]
    native["spec"]["schedulingGates"] = [{"name": "other/gate"}]
    assert pod_gates(native) is None


def member(spec: dict[str, Any], owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "restored-0",
            "labels": {GROUP_LABEL: "train"},
            "ownerReferences": owners or [],
        },
        "spec": {"containers": [], **spec},
    }


def test_a_pod_that_names_its_node_is_not_gated_and_is_said_to_bypass_the_gang() -> None:
    pod = member({"nodeName": "node-a"})
    assert pod_gates(pod) is None
    assert bypasses_gang(pod) == "node-a"
    assert bypass_warning(pod, "node-a") == (
        "spec.nodeName is set (node-a): the pod bypasses gang admission and counts as"
        " a bound member of PodGroup train"
    )


def test_the_pod_webhook_answers_a_bypass_with_a_warning_and_a_mark_and_writes_nothing() -> None:
    """No memo, no client: the handler cannot write anything (`sideEffects: None`); the
    leader tells the marked pod once it exists."""
    pod = member({"nodeName": "node-a"})
    patch = kopf.Patch(body=cast(kopf.Body, pod))
    warnings: list[str] = []
    gate_member_pod(pod, patch, warnings)
    assert warnings == [bypass_warning(pod, "node-a")]
    assert patch.as_json_patch() == [
        {"op": "add", "path": "/metadata/annotations", "value": {BYPASSED_ANNOTATION: "node-a"}}
    ]


def test_a_bound_pod_from_a_gated_job_template_loses_the_gate() -> None:
    job_owner = {"kind": "Job", "name": "train", "controller": True}
    pod = member({"nodeName": "node-a", "schedulingGates": [GATE, {"name": "x"}]}, [job_owner])
    assert pod_gates(pod) == [{"name": "x"}]


def test_a_pending_member_is_gated_and_bypasses_nothing() -> None:
    pod = member({})
    assert pod_gates(pod) == [GATE]
    assert bypasses_gang(pod) is None


def test_a_job_template_that_names_its_node_is_labelled_but_not_gated() -> None:
    opted_in = job({"scheduling.muster.dev/policy": "gang"})
    opted_in["spec"]["template"]["spec"]["nodeName"] = "node-a"
    template = job_template(opted_in)
    assert template is not None
    assert template["metadata"]["labels"][GROUP_LABEL] == "train"
    assert "schedulingGates" not in template["spec"]


def test_a_job_or_pod_claiming_devices_is_refused_where_dra_is_not_served() -> None:
    """An API server without resource.k8s.io/v1 would drop the claims as it stores the
    pods; the gang is refused with the reason, naming the field, and not gated."""
    no_dra = ServedFeatures("v1.32.13", devices=False)
    claiming = job({"scheduling.muster.dev/policy": "gang"})
    claiming["spec"]["template"]["spec"]["resourceClaims"] = [{"name": "gpu"}]
    patch = kopf.Patch()
    with pytest.raises(kopf.AdmissionError, match=r"spec\.template\.spec\.resourceClaims: DRA"):
        gate_labelled_job(kopf.Body(cast(Any, claiming)), patch, [], (), no_dra)
    assert not patch
    gate_labelled_job(kopf.Body(cast(Any, claiming)), patch, [], ())
    assert patch["spec"]["template"]["spec"]["schedulingGates"] == [GATE]
    pod = {"metadata": {"labels": {GROUP_LABEL: "g"}}, "spec": {"resourceClaims": [{}]}}
    with pytest.raises(kopf.AdmissionError, match=r"spec\.resourceClaims: DRA off"):
        gate_member_pod(pod, kopf.Patch(), [], no_dra)
