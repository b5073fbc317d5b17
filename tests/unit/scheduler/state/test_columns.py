"""Resource columns: a new resource gets the next column, demands share their rows."""

from __future__ import annotations

import pytest

from muster.scheduler.state.columns import ResourceColumns


def test_a_new_resource_gets_the_next_column_and_a_known_one_keeps_its_own() -> None:
    columns = ResourceColumns()
    assert columns.names == ["pods"]
    assert columns.column_of("cpu") == 1
    assert columns.column_of("nvidia.com/gpu") == 2
    assert columns.column_of("cpu") == 1
    assert columns.width == 3


def test_a_demand_counts_the_pod_and_its_row_is_shared_and_read_only() -> None:
    columns = ResourceColumns()
    demand = columns.demand_of((("cpu", 500),))
    assert demand == ((0, 1), (1, 500))
    row = columns.row(demand)
    assert row.tolist() == [1, 500]
    assert columns.row(demand) is row
    with pytest.raises(ValueError, match="read-only"):
        row[0] = 2


def test_rows_built_before_a_new_resource_are_built_again_wider() -> None:
    columns = ResourceColumns()
    demand = columns.demand_of((("cpu", 1),))
    assert len(columns.row(demand)) == 2
    columns.column_of("memory")
    assert columns.row(demand).tolist() == [1, 1, 0]


def test_a_copy_learns_resources_of_its_own() -> None:
    columns = ResourceColumns()
    twin = columns.copy()
    twin.column_of("cpu")
    assert (columns.names, twin.names) == (["pods"], ["pods", "cpu"])
