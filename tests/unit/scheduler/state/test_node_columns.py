"""The node table kept node by node says what one built from scratch would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from muster.scheduler import ClusterState
from muster.scheduler.state.predicates import NodeTable
from tests.unit.scheduler.builders import node, taint

NAMES = ["n0", "n1", "n10", "n2", "a", "zz", "m-3"]
TAINT_CHOICES = [[], [taint("gpu")], [taint("gpu"), taint("spot", "yes", "NoExecute")]]

CHANGES = st.one_of(
    st.tuples(
        st.just("apply"),
        st.sampled_from(NAMES),
        st.integers(0, len(TAINT_CHOICES) - 1),
        st.booleans(),
    ),
    st.tuples(st.just("delete"), st.sampled_from(NAMES)),
)


def assert_as_built_from_scratch(table: NodeTable) -> None:
    live = [slot for slot, record in enumerate(table.records) if record is not None]
    assert table.alive.tolist() == [record is not None for record in table.records]
    for slot in live:
        record = table.records[slot]
        assert record is not None
        assert bool(table.unschedulable[slot]) == record.unschedulable
        assert table.taint_sets[int(table.taint_set_of[slot])] == record.taints
    assert set(table.taint_sets) == {int(table.taint_set_of[slot]) for slot in live}
    by_rank = sorted(live, key=lambda slot: int(table.name_rank[slot]))
    assert by_rank == sorted(live, key=table.name)


@settings(max_examples=300, deadline=None)
@given(st.lists(CHANGES, max_size=40))
def test_a_table_after_any_changes_is_the_one_built_from_the_nodes(
    changes: list[tuple[object, ...]],
) -> None:
    state = ClusterState()
    for change in changes:
        if change[0] == "apply":
            _, name, taints, cordoned = change
            state.apply(
                "Node",
                node(
                    str(name), taints=TAINT_CHOICES[int(str(taints))], unschedulable=bool(cordoned)
                ),
            )
        else:
            state.delete("Node", "", str(change[1]))
        assert_as_built_from_scratch(state.node_table())


def test_a_copy_changes_apart_from_its_original() -> None:
    state = ClusterState()
    state.apply("Node", node("b"))
    twin = state.copy()
    twin.apply("Node", node("a", taints=[taint("gpu")]))
    twin.delete("Node", "", "b")
    assert [record.name for record in state.node_table().records if record] == ["b"]
    assert [record.name for record in twin.node_table().records if record] == ["a"]
    assert_as_built_from_scratch(state.node_table())
    assert_as_built_from_scratch(twin.node_table())
