"""The Job opt-in parser: the label and the native field yield the same model."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.constants import EXPECTED_RUNTIME_ANNOTATION
from muster.api.optin import JobOptIn, OptInError, read_job_opt_in


def job(
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    scheduling: dict[str, Any] | None = None,
    parallelism: int | None = 4,
    completions: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    if scheduling is not None:
        spec["scheduling"] = scheduling
    metadata: dict[str, Any] = {"name": "train", "namespace": "ml"}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}


GANG = {"scheduling.muster.dev/policy": "gang"}


def problems_of(manifest: dict[str, Any]) -> list[str]:
    with pytest.raises(OptInError) as raised:
        read_job_opt_in(manifest)
    return [str(problem) for problem in raised.value.problems]


def test_a_job_without_label_or_field_is_not_opted_in() -> None:
    assert read_job_opt_in(job(labels={"app": "x"})) is None


def test_a_job_with_an_empty_scheduling_field_is_not_opted_in() -> None:
    assert read_job_opt_in(job(scheduling={})) is None


def test_label_gang_defaults_min_count_to_parallelism() -> None:
    assert read_job_opt_in(job(labels=GANG)) == JobOptIn(
        policy="gang", min_count=4, topology_key=None, disruption_mode=None, source="label"
    )


def test_gang_defaults_to_the_completions_when_fewer_than_parallelism() -> None:
    opt_in = read_job_opt_in(job(labels=GANG, completions=2))
    assert opt_in is not None
    assert opt_in.min_count == 2


def test_label_gang_without_parallelism_is_a_gang_of_one() -> None:
    opt_in = read_job_opt_in(job(labels=GANG, parallelism=None))
    assert opt_in is not None
    assert opt_in.min_count == 1


def test_label_with_every_annotation() -> None:
    annotations = {
        "scheduling.muster.dev/min-count": "3",
        "scheduling.muster.dev/topology-key": "topology.kubernetes.io/zone",
        "scheduling.muster.dev/disruption-mode": "single",
    }
    assert read_job_opt_in(job(labels=GANG, annotations=annotations)) == JobOptIn(
        policy="gang",
        min_count=3,
        topology_key="topology.kubernetes.io/zone",
        disruption_mode="single",
        source="label",
    )


def test_label_basic_has_no_min_count() -> None:
    opt_in = read_job_opt_in(job(labels={"scheduling.muster.dev/policy": "basic"}))
    assert opt_in is not None
    assert (opt_in.policy, opt_in.min_count, opt_in.is_gang) == ("basic", None, False)


def test_native_field_gang_with_topology_matches_the_label_form() -> None:
    from_field = read_job_opt_in(
        job(
            scheduling={
                "schedulingPolicy": {"gang": {"minCount": 3}},
                "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
                "disruptionMode": {"all": {}},
            }
        )
    )
    from_label = read_job_opt_in(
        job(
            labels=GANG,
            annotations={
                "scheduling.muster.dev/min-count": "3",
                "scheduling.muster.dev/topology-key": "topology.kubernetes.io/zone",
                "scheduling.muster.dev/disruption-mode": "all",
            },
        )
    )
    assert from_field is not None
    assert from_label is not None
    assert from_field.source == "field"
    assert from_label.source == "label"
    assert (
        from_field.policy,
        from_field.min_count,
        from_field.topology_key,
        from_field.disruption_mode,
    ) == (from_label.policy, from_label.min_count, from_label.topology_key, "all")


def test_native_empty_gang_defaults_min_count_to_parallelism() -> None:
    opt_in = read_job_opt_in(job(scheduling={"schedulingPolicy": {"gang": {}}}, parallelism=6))
    assert opt_in is not None
    assert opt_in.min_count == 6


def test_native_basic() -> None:
    opt_in = read_job_opt_in(job(scheduling={"schedulingPolicy": {"basic": {}}}))
    assert opt_in is not None
    assert (opt_in.policy, opt_in.source) == ("basic", "field")


def test_field_wins_over_label_and_says_so() -> None:
    opt_in = read_job_opt_in(
        job(
            labels={"scheduling.muster.dev/policy": "basic"},
            annotations={"scheduling.muster.dev/min-count": "not even checked"},
            scheduling={"schedulingPolicy": {"gang": {"minCount": 2}}},
        )
    )
    assert opt_in is not None
    assert (opt_in.policy, opt_in.min_count, opt_in.source) == ("gang", 2, "field")
    assert opt_in.label_ignored


def test_label_alone_is_not_reported_as_ignored() -> None:
    opt_in = read_job_opt_in(job(labels=GANG))
    assert opt_in is not None
    assert not opt_in.label_ignored


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (
            job(labels={"scheduling.muster.dev/policy": "gangs"}),
            'metadata.labels[scheduling.muster.dev/policy]: "gangs" is not a policy:'
            " must be basic or gang",
        ),
        (
            job(labels=GANG, annotations={"scheduling.muster.dev/min-count": "abc"}),
            'metadata.annotations[scheduling.muster.dev/min-count]: "abc" is not an integer',
        ),
        (
            job(labels=GANG, annotations={"scheduling.muster.dev/min-count": "5"}),
            "metadata.annotations[scheduling.muster.dev/min-count]: 5 exceeds spec.parallelism 4",
        ),
        (
            job(labels=GANG, annotations={"scheduling.muster.dev/min-count": "0"}),
            "metadata.annotations[scheduling.muster.dev/min-count]: 0 must be at least 1",
        ),
        (
            job(labels=GANG, annotations={"scheduling.muster.dev/min-count": "4"}, completions=2),
            "metadata.annotations[scheduling.muster.dev/min-count]: 4 exceeds spec.completions 2",
        ),
        (
            job(
                labels={"scheduling.muster.dev/policy": "basic"},
                annotations={"scheduling.muster.dev/min-count": "2"},
            ),
            "metadata.annotations[scheduling.muster.dev/min-count]: applies to policy gang only,"
            " not basic",
        ),
        (
            job(labels=GANG, annotations={"scheduling.muster.dev/topology-key": "a zone"}),
            'metadata.annotations[scheduling.muster.dev/topology-key]: "a zone" is not a valid'
            " label key",
        ),
        (
            job(labels=GANG, annotations={"scheduling.muster.dev/disruption-mode": "some"}),
            'metadata.annotations[scheduling.muster.dev/disruption-mode]: "some" is not a'
            " disruption mode: must be single or all",
        ),
        (
            job(scheduling={"schedulingPolicy": {"gang": {"minCount": 5}}}),
            "spec.scheduling.schedulingPolicy.gang.minCount: 5 exceeds spec.parallelism 4",
        ),
        (
            job(scheduling={"schedulingPolicy": {"gang": {"minCount": "4"}}}),
            'spec.scheduling.schedulingPolicy.gang.minCount: "4" is not an integer',
        ),
        (
            job(scheduling={"schedulingPolicy": {"gang": {}, "basic": {}}}),
            "spec.scheduling.schedulingPolicy: exactly one of basic or gang must be set",
        ),
        (
            job(
                scheduling={
                    "schedulingPolicy": {"gang": {}},
                    "schedulingConstraints": {"topology": [{"key": "-zone"}]},
                }
            ),
            'spec.scheduling.schedulingConstraints.topology[0].key: "-zone" is not a valid'
            " label key",
        ),
        (
            job(
                scheduling={
                    "schedulingPolicy": {"gang": {}},
                    "schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]},
                }
            ),
            "spec.scheduling.schedulingConstraints.topology: 2 constraints given,"
            " at most 1 is supported",
        ),
        (
            job(scheduling={"schedulingPolicy": {"gang": {}}, "disruptionMode": {}}),
            "spec.scheduling.disruptionMode: exactly one of single or all must be set",
        ),
    ],
)
def test_problems_name_the_field_and_the_value(manifest: dict[str, Any], expected: str) -> None:
    assert problems_of(manifest) == [expected]


def test_every_problem_is_reported_at_once() -> None:
    annotations = {
        "scheduling.muster.dev/min-count": "x",
        "scheduling.muster.dev/topology-key": "a b",
        "scheduling.muster.dev/disruption-mode": "none",
    }
    assert len(problems_of(job(labels=GANG, annotations=annotations))) == 3


@pytest.mark.parametrize("value", ["90 minutes", "5d", "x" * 10_000])
def test_an_expected_runtime_that_is_not_a_duration_is_refused_naming_the_annotation(
    value: str,
) -> None:
    manifest = job(labels=GANG, annotations={EXPECTED_RUNTIME_ANNOTATION: value})
    with pytest.raises(OptInError) as refused:
        read_job_opt_in(manifest)
    (problem,) = refused.value.problems
    assert problem.path == f"metadata.annotations[{EXPECTED_RUNTIME_ANNOTATION}]"
    assert "is not a duration such as 90m" in problem.message
    assert len(problem.message) < 120


def test_an_expected_runtime_written_as_go_writes_it_is_taken() -> None:
    manifest = job(labels=GANG, annotations={EXPECTED_RUNTIME_ANNOTATION: "1h30m"})
    assert read_job_opt_in(manifest) is not None
