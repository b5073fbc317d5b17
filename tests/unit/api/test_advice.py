"""Warnings about valid objects that are likely mistakes: bounded, escaped, helpful."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.advice import (
    MAX_WARNING_LENGTH,
    MAX_WARNINGS,
    bounded,
    key_warnings,
    named_levels,
    nearest_node_key,
    topology_warnings,
)
from muster.api.problems import shown

NODE_KEYS = {
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "example.com/rack",
    "example.com/block",
}


def job(annotations: dict[str, str], **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "j",
            "labels": {"scheduling.muster.dev/policy": "gang", **labels},
            "annotations": annotations,
        },
        "spec": {"parallelism": 4, "template": {"spec": {"containers": []}}},
    }


def pod_group(key: str | None, annotations: dict[str, str]) -> dict[str, Any]:
    constraints = {} if key is None else {"schedulingConstraints": {"topology": [{"key": key}]}}
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "annotations": annotations},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **constraints},
    }


def test_a_typo_of_a_key_names_the_key_meant() -> None:
    warnings = key_warnings(job({"scheduling.muster.dev/topology-prefered": "rack"}))
    assert warnings == [
        "unknown key scheduling.muster.dev/topology-prefered:"
        " did you mean scheduling.muster.dev/topology-preferred?"
    ]


def test_an_unknown_label_too_and_one_with_nothing_near() -> None:
    warnings = key_warnings(job({}, **{"scheduling.muster.dev/zzz": "x"}))
    assert warnings == ["unknown key scheduling.muster.dev/zzz (Muster ignores it)"]


def test_known_keys_and_other_prefixes_are_quiet() -> None:
    manifest = job(
        {
            "scheduling.muster.dev/topology-preferred": "example.com/rack",
            "scheduling.muster.dev/expected-runtime": "1h",
            "example.com/whatever": "x",
        }
    )
    assert key_warnings(manifest) == []
    assert topology_warnings(manifest, NODE_KEYS) == []


def test_a_runtime_that_is_not_a_duration_is_warned_on_a_pod_group_not_on_a_job() -> None:
    """A PodGroup's or a pod's runtime is only a hint, so it is not refused; but a typo
    would leave the estimates without it in silence. A Job's is refused by its opt-in."""
    typo = {"scheduling.muster.dev/expected-runtime": "2hh" + "\x1b" * 200}
    (warning,) = key_warnings(pod_group(None, typo))
    assert warning.startswith('expected-runtime "2hh\\u001b')
    assert warning.endswith("is not a duration such as 90m, 1h30m or 45s: ignored")
    assert len(warning) <= MAX_WARNING_LENGTH
    assert key_warnings(pod_group(None, {"scheduling.muster.dev/expected-runtime": "2h"})) == []
    assert key_warnings(job(typo)) == []


def test_a_hostile_key_of_60_kb_comes_back_cut_and_escaped() -> None:
    key = 'scheduling.muster.dev/a"\x1b[31m' + "x" * 60_000
    (warning,) = key_warnings(job({key: "v"}))
    assert len(warning) <= MAX_WARNING_LENGTH
    assert "\x1b" not in warning and "\\u001b" in warning
    assert '\\"' in warning and "..." in warning


def test_many_unknown_keys_make_a_few_warnings_that_say_there_are_more() -> None:
    annotations = {f"scheduling.muster.dev/k{index}": "v" for index in range(10_000)}
    warnings = bounded(key_warnings(job(annotations)))
    assert len(warnings) == MAX_WARNINGS
    assert warnings[-1] == "and 2 more warnings like these"  # only one more than shown is read
    assert all(len(warning) <= MAX_WARNING_LENGTH for warning in warnings)


def test_bounded_clips_every_warning() -> None:
    assert bounded(["x" * 500]) == ["x" * (MAX_WARNING_LENGTH - 3) + "..."]
    assert bounded(["a", "b"]) == ["a", "b"]


def test_shown_keeps_short_plain_text() -> None:
    assert shown("topology.kubernetes.io/zone") == "topology.kubernetes.io/zone"
    assert shown("é") == "\\u00e9"
    assert len(shown("y" * 1000)) == 40


def test_a_required_key_no_node_carries_names_the_nearest_node_key() -> None:
    manifest = job({"scheduling.muster.dev/topology-key": "topology.kubernetes.io/zon"})
    assert topology_warnings(manifest, NODE_KEYS) == [
        "no node carries the topology key topology.kubernetes.io/zon"
        " (did you mean topology.kubernetes.io/zone?)"
    ]


def test_a_preferred_and_a_slice_level_no_node_carries() -> None:
    manifest = pod_group(
        "topology.kubernetes.io/zone",
        {
            "scheduling.muster.dev/topology-preferred": "example.com/racks",
            "scheduling.muster.dev/topology-slice": "example.com/switch",
            "scheduling.muster.dev/topology-slice-size": "2",
        },
    )
    assert topology_warnings(manifest, NODE_KEYS) == [
        "no node carries the preferred level example.com/racks (did you mean example.com/rack?)",
        "no node carries the slice level example.com/switch",
    ]


def test_the_levels_of_a_workloads_templates_and_of_the_native_field() -> None:
    workload = {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w"},
        "spec": {
            "podGroupTemplates": [
                {"name": "a", "schedulingConstraints": {"topology": [{"key": "example.com/r"}]}},
                {"name": "b", "schedulingConstraints": {"topology": [{"key": "example.com/r"}]}},
            ]
        },
    }
    assert named_levels(workload) == [("topology key", "example.com/r")]
    native = job({})
    del native["metadata"]["labels"]["scheduling.muster.dev/policy"]
    native["spec"]["scheduling"] = {
        "schedulingPolicy": {"gang": {}},
        "schedulingConstraints": {"topology": [{"key": "example.com/r"}]},
    }
    assert named_levels(native) == [("topology key", "example.com/r")]


def test_malformed_levels_are_left_to_validation() -> None:
    manifest = job({"scheduling.muster.dev/topology-preferred": "not a key!"})
    assert named_levels(manifest) == []
    assert named_levels({"kind": "Pod", "metadata": None}) == []


@pytest.mark.parametrize(
    ("key", "nearest"),
    [
        ("topology.kubernetes.io/zon", "topology.kubernetes.io/zone"),
        ("topolgy.kubernetes.io/zone", "topology.kubernetes.io/zone"),
        ("example.com/rak", "example.com/rack"),
        ("example.com/switch", None),  # a long shared prefix is not enough
        ("example.com/lock", "example.com/block"),  # one letter dropped
    ],
)
def test_the_nearest_node_key(key: str, nearest: str | None) -> None:
    assert nearest_node_key(key, NODE_KEYS) == nearest
