from __future__ import annotations

import pytest

from muster.api.keys import GroupKey, PodKey
from muster.scheduler.memory.release_failures import ReleaseFailure
from muster.scheduler.state.reads import (
    group_records,
    member_entries,
    member_records,
    node_records,
    pod_count,
    pod_entry,
    pod_record,
    release_failure,
    waiting_gangs,
)
from tests.unit.scheduler.builders import cluster, gang, node, pod

KEY = GroupKey("default", "g")


def test_a_gang_s_members_are_read_by_name_with_their_records() -> None:
    state = cluster(node("n1"), *gang("g", 3), pod("plain"))
    assert [record.key.name for record in member_records(state, KEY)] == ["g-0", "g-1", "g-2"]
    assert [entry.record for entry in member_entries(state, KEY)] == member_records(state, KEY)
    assert member_records(state, GroupKey("default", "missing")) == []
    assert pod_count(state) == 4
    assert [record.name for record in node_records(state)] == ["n1"]


def test_groups_are_read_through_a_view_that_cannot_change_the_state() -> None:
    state = cluster(*gang("g", 2))
    groups = group_records(state)
    assert groups[KEY].min_count == 2
    assert waiting_gangs(state) == {KEY}
    with pytest.raises(TypeError):
        groups[GroupKey("default", "h")] = groups[KEY]  # type: ignore[index]


def test_a_pod_is_read_with_its_last_failed_release() -> None:
    state = cluster(*gang("g", 1))
    member = PodKey("default", "g-0")
    assert pod_record(state, member) == pod_entry(state, member).record  # type: ignore[union-attr]
    assert pod_record(state, PodKey("default", "gone")) is None
    assert release_failure(state, member) is None
    failure = ReleaseFailure(422, "refused", 10.0)
    state.observe_release(member, failure)
    assert release_failure(state, member) == failure
