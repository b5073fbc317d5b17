"""Devices claimed through Dynamic Resource Allocation, allocated as kube-scheduler would.

kube-scheduler's DynamicResources filter allocates, for each pod on each node, every
claim of the pod not allocated yet from the node's devices not allocated to any
claim, and refuses the node when it cannot ("cannot allocate all claims"); a claim
already allocated (to another pod sharing it, or earlier) binds its pods to the node
of its devices. A gang is placed pod by pod (`interplay`), so each pod sees the
devices its gang's pods placed before it took, and a claim shared by several pods of
the gang is allocated once, for the first of them (on each node that could hold it in
turn, when the first falls short: `shared_claims`). The devices themselves, and the
allocation on one node, are the `ledger`'s.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np

from muster.scheduler.devices.book import Need
from muster.scheduler.devices.intake import DeviceId
from muster.scheduler.devices.ledger import DeviceLedger, located
from muster.scheduler.state.intake import PodRecord
from muster.scheduler.state.state import ClusterState

CANNOT_ALLOCATE = "cannot allocate all claims"


@dataclass(frozen=True, slots=True)
class GangDevices:
    """A gang's pods' claims (by pod name) and the cycle's devices they are placed on."""

    ledger: DeviceLedger
    needs: Mapping[str, tuple[Need, ...]]


def needs_of(state: ClusterState, record: PodRecord) -> tuple[Need, ...] | str:
    """The claims the pod needs (`DeviceBook.needs`), or why they cannot be known yet."""
    key = record.key
    return state.devices.needs(key.namespace, key.name, record.device_claims)


def shape_part(needs: tuple[Need, ...] | str) -> Hashable:
    """What of a pod's claims makes its shape: the requests and allocations, and the
    claim itself only when pods share it (each pod's claim from a template is its own,
    and alike)."""
    if isinstance(needs, str):
        return needs
    return tuple(
        (need.requests, need.constraints, need.allocated, need.key if need.shared else None)
        for need in needs
    )


def empty_ledger(state: ClusterState, size: int) -> DeviceLedger:
    """The devices as if none were allocated (a gang alone on the cluster)."""
    where = located(state.devices, state.node_slot, size, state.node_table())
    return DeviceLedger(state.devices, where, empty=True)


def _allocated(state: ClusterState, size: int) -> DeviceLedger:
    """The devices with those allocated in claims' status taken: kept on the book for
    the cycles after, and brought up to date from what was kept when only claims
    changed (the devices whose allocation came or went), copied for each cycle."""
    book, table = state.devices, state.node_table()
    allocated = book.allocated()
    kept = book.derived.get("allocated")
    where = located(book, state.node_slot, size, table)
    ledger: DeviceLedger
    counted: frozenset[DeviceId]
    if kept is not None and kept[1] is table and kept[2][0].where is where:
        ledger, counted = kept[2]
        if counted is not allocated:
            ledger = ledger.copy()  # what was kept may be shared with a what-if's copy
            ledger.deallocate_devices(counted - allocated)
            ledger.take_devices(allocated - counted)
    else:
        ledger = DeviceLedger(book, where)
    book.derived["allocated"] = (book.version, table, (ledger, allocated))
    return ledger.copy()


def cycle_ledger(state: ClusterState, size: int) -> DeviceLedger | None:
    """The cycle's devices, with those of pods placed before it taken: bound pods' claims
    are allocated in their status, and the claims of an admitted gang's pods not bound
    yet are allocated on their planned node. None where no device is published or
    claimed."""
    book = state.devices
    if not book.used:
        return None
    ledger = _allocated(state, size)
    unallocated = []
    for key in book.claimants:
        entry = state.pods.get(key)
        if entry is None or entry.taken_on is None:
            continue
        needs = needs_of(state, entry.record)
        if not isinstance(needs, str) and any(need.allocated is None for need in needs):
            unallocated.append((key, entry.taken_on, needs))
    for _, node, needs in sorted(unallocated, key=lambda item: item[0]):
        slot = state.node_slot(node)
        if slot is not None and slot < size:
            ledger.take(needs, slot)
    return ledger


@dataclass(frozen=True, slots=True)
class NodeDevices:
    node: str
    free: int
    total: int


def devices_per_node(state: ClusterState) -> tuple[NodeDevices, ...]:
    """Each node with devices, with how many of them no claim (nor planned pod) holds:
    most free first, then by name."""
    table = state.node_table()
    ledger = cycle_ledger(state, table.size)
    if ledger is None:
        return ()
    total = ledger.where.total
    free = total - ledger.taken_on
    found = [
        NodeDevices(table.name(int(slot)), int(free[slot]), int(total[slot]))
        for slot in np.flatnonzero(total)
        if table.records[int(slot)] is not None
    ]
    return tuple(sorted(found, key=lambda item: (-item.free, item.node)))
