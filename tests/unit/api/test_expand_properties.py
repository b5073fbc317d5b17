"""Whatever a valid opt-in says, expansion makes objects the API server accepts."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.api.expand import expand_job, expand_workload
from muster.api.optin import read_job_opt_in
from muster.api.validation import validate_object

TOPOLOGY_KEYS = ["topology.kubernetes.io/zone", "topology.muster.dev/rack", "rack", None]


@st.composite
def opted_in_jobs(draw: st.DrawFn) -> dict[str, Any]:
    parallelism = draw(st.integers(min_value=1, max_value=64))
    completions = draw(st.one_of(st.none(), st.integers(min_value=parallelism, max_value=128)))
    gang = draw(st.booleans())
    annotations: dict[str, str] = {}
    if gang and draw(st.booleans()):
        annotations["scheduling.muster.dev/min-count"] = str(
            draw(st.integers(min_value=1, max_value=parallelism))
        )
    key = draw(st.sampled_from(TOPOLOGY_KEYS))
    if key is not None:
        annotations["scheduling.muster.dev/topology-key"] = key
    mode = draw(st.sampled_from(["single", "all", None]))
    if mode is not None:
        annotations["scheduling.muster.dev/disruption-mode"] = mode
    name = draw(st.from_regex(r"[a-z]([a-z0-9-]{0,30}[a-z0-9])?", fullmatch=True))
    spec: dict[str, Any] = {
        "parallelism": parallelism,
        "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
    }
    if completions is not None:
        spec["completions"] = completions
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {"scheduling.muster.dev/policy": "gang" if gang else "basic"},
            "annotations": annotations,
        },
        "spec": spec,
    }


@settings(max_examples=100)
@given(opted_in_jobs())
def test_expansion_of_a_valid_job_is_valid(job: dict[str, Any]) -> None:
    assert validate_object(job) == []
    opt_in = read_job_opt_in(job)
    assert opt_in is not None
    expansion = expand_job(job, opt_in)
    assert validate_object(expansion.workload) == []
    assert validate_object(expansion.pod_group) == []
    for pod_group in expand_workload(expansion.workload):
        assert validate_object(pod_group) == []
        assert (
            pod_group["spec"]["schedulingPolicy"] == expansion.pod_group["spec"]["schedulingPolicy"]
        )
