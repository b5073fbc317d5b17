"""Pod, PodGroup and Job identities, and an object's key and resourceVersion."""

from __future__ import annotations

from muster.api.keys import (
    GroupKey,
    JobRef,
    PodKey,
    object_key,
    resource_version,
    revision,
)


def test_keys_are_written_namespace_slash_name() -> None:
    assert str(GroupKey("team", "train")) == "team/train"
    assert str(PodKey("team", "train-0")) == "team/train-0"
    assert str(JobRef("team", "train", "uid-1")) == "team/train"


def test_keys_sort_by_namespace_then_name() -> None:
    keys = [PodKey("b", "a"), PodKey("a", "z"), PodKey("a", "b")]
    assert sorted(keys) == [PodKey("a", "b"), PodKey("a", "z"), PodKey("b", "a")]


def test_object_key_of_namespaced_and_cluster_scoped_objects() -> None:
    assert object_key({"metadata": {"namespace": "ns", "name": "p"}}) == ("ns", "p")
    assert object_key({"metadata": {"name": "node-1"}}) == ("", "node-1")
    assert object_key({}) == ("", "")


def test_resource_version_as_written_and_as_a_number() -> None:
    pod = {"metadata": {"resourceVersion": "42"}}
    assert resource_version(pod) == "42"
    assert revision(pod) == 42
    assert resource_version({"metadata": {}}) == ""
    assert revision({"metadata": {}}) is None
    assert revision({"metadata": {"resourceVersion": "opaque"}}) is None
