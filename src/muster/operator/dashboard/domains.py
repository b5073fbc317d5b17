"""How full each topology domain is: capacity occupied, reserved and free.

*Occupied* is what bound pods take, *reserved* what members of an admitted gang's plan
not bound yet hold (`ClusterState.reserved`; `ClusterState.taken` is both); free is
allocatable less both. Summed over the nodes of each domain of each level, for the
resources a person watches: every extended resource named `.../gpu`, and cpu.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from muster.scheduler import ClusterState, format_amount

CPU = "cpu"
ZONE = "topology.kubernetes.io/zone"


@dataclass(frozen=True, slots=True)
class Fill:
    """One resource of one domain, in the engine's units (millicores for cpu)."""

    resource: str
    occupied: int
    reserved: int
    allocatable: int

    @property
    def free(self) -> int:
        return max(0, self.allocatable - self.occupied - self.reserved)

    def words(self) -> str:
        """`12 occupied, 4 reserved, 16 free of 32 nvidia.com/gpu`: the picture in text."""
        amounts = (self.occupied, self.reserved, self.free, self.allocatable)
        occupied, reserved, free, total = (format_amount(self.resource, a) for a in amounts)
        return f"{occupied} occupied, {reserved} reserved, {free} free of {total} {self.resource}"


@dataclass(frozen=True, slots=True)
class Domain:
    level: str  # the label key
    value: str
    nodes: int
    fills: tuple[Fill, ...]


def watched_resources(state: ClusterState) -> tuple[str, ...]:
    """GPUs of every vendor first, then cpu."""
    gpus = sorted(name for name in state.resource_names if name.endswith("/gpu"))
    return (*gpus, CPU)


def domains(state: ClusterState, levels: tuple[str, ...]) -> tuple[Domain, ...]:
    """Every domain of every level (nodes without the label belong to none), by level
    in the order given, then by value."""
    table = state.node_table()
    slots = [slot for slot, record in enumerate(table.records) if record is not None]
    resources = [r for r in watched_resources(state) if r in state.resource_names]
    columns = [state.resource_names.index(r) for r in resources]
    reserved = state.reserved()[:, columns]
    allocatable = state.allocatable[:, columns]
    taken = state.taken[:, columns]
    found: list[Domain] = []
    for level in levels:
        members: dict[str, list[int]] = {}
        for slot in slots:
            value = table.records[slot].labels.get(level)  # type: ignore[union-attr]
            if value is not None:
                members.setdefault(value, []).append(slot)
        for value in sorted(members):
            rows = np.array(members[value])
            reserved_here = reserved[rows].sum(axis=0)
            fills = tuple(
                Fill(
                    resource,
                    occupied=int(taken[rows, index].sum() - reserved_here[index]),
                    reserved=int(reserved_here[index]),
                    allocatable=int(allocatable[rows, index].sum()),
                )
                for index, resource in enumerate(resources)
            )
            found.append(Domain(level, value, len(rows), fills))
    return tuple(found)
