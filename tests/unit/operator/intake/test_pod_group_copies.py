"""PodGroups as last seen, kept compressed: each read a fresh copy, with the version it
was read at."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.operator.intake.pod_group_copies import PodGroupCopies
from tests.unit.scheduler.builders import pod_group

KEY = GroupKey("default", "train")


def stored(version: str | None) -> dict[str, object]:
    obj = pod_group("train", admitted=True, plan={"train-0": "n1"})
    if version is not None:
        obj["metadata"]["resourceVersion"] = version
    return obj


def test_a_copy_reads_back_whole_and_each_read_is_its_own() -> None:
    copies = PodGroupCopies()
    copies.put(KEY, stored("42"))
    first = copies.get(KEY)
    assert first == stored("42")
    assert first is not None
    first["status"]["plan"] = {}
    assert copies.get(KEY) == stored("42")
    assert copies.version(KEY) == 42
    assert KEY in copies and len(copies) == 1


def test_a_version_that_is_no_number_is_none_and_a_popped_copy_is_gone() -> None:
    copies = PodGroupCopies()
    copies.put(KEY, stored("not-a-number"))
    assert copies.version(KEY) is None
    copies.pop(KEY)
    copies.pop(KEY)
    assert copies.get(KEY) is None and copies.version(KEY) is None
    assert KEY not in copies and len(copies) == 0
