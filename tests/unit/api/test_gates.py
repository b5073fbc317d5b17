"""The gang gate in a list of scheduling gates."""

from __future__ import annotations

from muster.api.constants import GANG_GATE
from muster.api.gates import has_gang_gate, pod_group_name, with_gang_gate, without_gang_gate

OTHER = {"name": "example.com/other"}
GANG = {"name": GANG_GATE}


def test_the_gate_is_added_once_after_the_others_and_taken_away_alone() -> None:
    assert with_gang_gate([OTHER]) == [OTHER, GANG]
    assert with_gang_gate([GANG, OTHER]) == [GANG, OTHER]
    assert without_gang_gate([GANG, OTHER]) == [OTHER]


def test_entries_that_are_not_gates_are_some_other_gate() -> None:
    assert not has_gang_gate(["scheduling.muster.dev/gang", None, OTHER])
    assert has_gang_gate([None, GANG])


def test_a_pod_joins_the_pod_group_its_label_names() -> None:
    member = {"metadata": {"labels": {"scheduling.muster.dev/pod-group": "train"}}}
    assert pod_group_name(member) == "train"
    assert pod_group_name({"metadata": {"labels": {}}}) is None
    assert pod_group_name({}) is None
