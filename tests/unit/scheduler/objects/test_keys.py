"""Pod, PodGroup and Job identities: ordered, hashable, written namespace/name."""

from __future__ import annotations

from muster.scheduler.objects.keys import GroupKey, JobRef, PodKey


def test_keys_are_written_namespace_slash_name() -> None:
    assert str(GroupKey("team", "train")) == "team/train"
    assert str(PodKey("team", "train-0")) == "team/train-0"
    assert str(JobRef("team", "train", "uid-1")) == "team/train"


def test_keys_sort_by_namespace_then_name() -> None:
    keys = [PodKey("b", "a"), PodKey("a", "z"), PodKey("a", "b")]
    assert sorted(keys) == [PodKey("a", "b"), PodKey("a", "z"), PodKey("b", "a")]
