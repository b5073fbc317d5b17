"""Resources as the columns of the state's capacity arrays, and demands as their rows.

A resource gets the next column the first time a node offers it or a pod asks for
it; the arrays are widened to match (`ClusterStore`). Pods share few shapes, so a
pod's requests become a demand (column, amount pairs, the pod count included) once
per shape, and a demand's dense row is built once and shared by every pod of it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from muster.scheduler.state.intake import POD_COUNT

Demand = tuple[tuple[int, int], ...]  # (resource column, amount)
Requests = tuple[tuple[str, int], ...]  # (resource name, amount), as a record has them


class ResourceColumns:
    """The resources known so far, by column, and the demands and rows built from them."""

    def __init__(self) -> None:
        self.names: list[str] = [POD_COUNT]
        self._column: dict[str, int] = {POD_COUNT: 0}
        self._rows: dict[Demand, npt.NDArray[np.int64]] = {}
        self._demands: dict[Requests, Demand] = {}

    @property
    def width(self) -> int:
        return len(self.names)

    def column_of(self, resource: str) -> int:
        """The resource's column, a new one (the rows built so far dropped, they are
        too narrow now) when it was not known."""
        column = self._column.get(resource)
        if column is None:
            column = len(self.names)
            self._column[resource] = column
            self.names.append(resource)
            self._rows.clear()
        return column

    def demand_of(self, requests: Requests) -> Demand:
        """A pod's requests as a demand, one pod counted in."""
        demand = self._demands.get(requests)
        if demand is None:
            columns = [(self.column_of(resource), amount) for resource, amount in requests]
            demand = ((0, 1), *columns)
            self._demands[requests] = demand
        return demand

    def row(self, demand: Demand) -> npt.NDArray[np.int64]:
        """The demand as a row vector, shared by every pod of its shape (read-only)."""
        row = self._rows.get(demand)
        if row is None:
            row = np.zeros(len(self.names), dtype=np.int64)
            for column, amount in demand:
                row[column] = amount
            row.setflags(write=False)
            self._rows[demand] = row
        return row

    def copy(self) -> ResourceColumns:
        """A copy for a what-if: its own indexes, the rows shared (never written)."""
        twin = ResourceColumns()
        twin.names = list(self.names)
        twin._column = dict(self._column)
        twin._rows = dict(self._rows)
        twin._demands = dict(self._demands)
        return twin
