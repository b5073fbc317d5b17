"""Devices claimed through Dynamic Resource Allocation, allocated as kube-scheduler would.

kube-scheduler's DynamicResources filter allocates, for each pod on each node, every
claim of the pod not allocated yet from the node's devices not allocated to any
claim, and refuses the node when it cannot ("cannot allocate all claims"); a claim
already allocated (to another pod sharing it, or earlier) binds its pods to the node
of its devices. A gang is placed pod by pod (`interplay`), so each pod sees the
devices its gang's pods placed before it took, and a claim shared by several pods of
the gang is allocated once, for the first of them.

Devices are counted by kind (driver, attributes, capacity: all a selector reads, see
`device_selectors`), per node, in arrays, so which nodes can take a pod is answered
at once for every node (`DeviceLedger.allowed`); the allocation itself (`take`) is
then done on the one node chosen. kube-scheduler searches every combination of
devices for the first that satisfies every request; devices of one kind being
interchangeable, the search here goes over how many of each kind a request takes,
which finds a combination whenever one exists.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from muster.scheduler.rules.device_selectors import DeviceKind, selects
from muster.scheduler.state.device_book import DeviceBook, Need
from muster.scheduler.state.device_intake import Device, DeviceId, Request
from muster.scheduler.state.intake import PodRecord
from muster.scheduler.state.state import ClusterState

BoolArray = npt.NDArray[np.bool_]
Counts = npt.NDArray[np.int64]

CANNOT_ALLOCATE = "cannot allocate all claims"
Selection = tuple[str, tuple[str, ...]]  # device class, the request's own selectors


@dataclass(slots=True)
class _Kinds:
    """Per device kind, how many devices of it each node slot has."""

    kinds: list[DeviceKind]
    total: dict[DeviceKind, Counts]
    devices: dict[int, dict[DeviceKind, list[Device]]]  # slot -> kind -> devices, by name


def _kinds_of(book: DeviceBook, node_slot: Callable[[str], int | None], size: int) -> _Kinds:
    pools = book.pools()
    total: dict[DeviceKind, Counts] = {}
    devices: dict[int, dict[DeviceKind, list[Device]]] = {}
    for node, on_node in pools.on_node.items():
        slot = node_slot(node)
        if slot is None or slot >= size:
            continue
        for device in sorted(on_node, key=lambda item: item.id):
            devices.setdefault(slot, {}).setdefault(device.kind, []).append(device)
            if device.kind not in total:
                total[device.kind] = np.zeros(size, dtype=np.int64)
            total[device.kind][slot] += 1
    return _Kinds(sorted(total, key=repr), total, devices)


class DeviceLedger:
    """One cycle's devices: where they are, and which are taken (allocated in claims'
    status, or for pods planned before, this cycle or in an admitted gang's plan)."""

    def __init__(
        self,
        book: DeviceBook,
        node_slot: Callable[[str], int | None],
        size: int,
        *,
        empty: bool = False,
    ) -> None:
        self.book = book
        self.size = size
        self._node_slot = node_slot
        self._kinds = _kinds_of(book, node_slot, size)
        self.incomplete = np.zeros(size, dtype=np.bool_)
        for node in book.pools().incomplete:
            slot = node_slot(node)
            if slot is not None and slot < size:
                self.incomplete[slot] = True
        self.taken: set[DeviceId] = set()
        self.taken_count = {kind: np.zeros(size, dtype=np.int64) for kind in self._kinds.kinds}
        self.made: dict[Hashable, int] = {}  # claim -> the slot it was allocated on
        self._matching: dict[Selection, list[DeviceKind]] = {}
        if not empty:
            self._take_allocated(book)

    def copy(self) -> DeviceLedger:
        twin = DeviceLedger.__new__(DeviceLedger)
        twin.book, twin.size, twin._node_slot = self.book, self.size, self._node_slot
        twin._kinds, twin.incomplete, twin._matching = self._kinds, self.incomplete, self._matching
        twin.taken = set(self.taken)
        twin.taken_count = {kind: counts.copy() for kind, counts in self.taken_count.items()}
        twin.made = dict(self.made)
        return twin

    def _take_allocated(self, book: DeviceBook) -> None:
        node_of = book.pools().node_of
        for device_id in book.allocated():
            node = node_of.get(device_id)
            slot = None if node is None else self._node_slot(node)
            if slot is not None and slot < self.size:
                self._mark(slot, device_id)

    def _mark(self, slot: int, device_id: DeviceId) -> None:
        for kind, devices in self._kinds.devices.get(slot, {}).items():
            if any(device.id == device_id for device in devices):
                if device_id not in self.taken:
                    self.taken.add(device_id)
                    self.taken_count[kind][slot] += 1
                return

    # ---- which nodes, at once ------------------------------------------------------

    def matching(self, request: Request) -> list[DeviceKind]:
        """The kinds of device the request may get (none when its class is unknown)."""
        selection = (request.class_name, request.selectors)
        found = self._matching.get(selection)
        if found is None:
            selectors = self.book.classes.get(request.class_name)
            expressions = () if selectors is None else (*selectors, *request.selectors)
            found = [
                kind
                for kind in self._kinds.kinds
                if selectors is not None and selects(expressions, kind)
            ]
            self._matching[selection] = found
        return found

    def _count(self, kinds: Sequence[DeviceKind], *, free: bool) -> Counts:
        counts = np.zeros(self.size, dtype=np.int64)
        for kind in kinds:
            counts += self._kinds.total[kind]
            if free:
                counts -= self.taken_count[kind]
        return counts

    def allowed(self, needs: Sequence[Need]) -> BoolArray:
        """Nodes where the pod's claims could be allocated, as far as counts tell: a
        claim allocated already is where its devices are; the others need enough free
        devices of what they ask for (and, for all devices, every one of them free)."""
        allowed = np.ones(self.size, dtype=np.bool_)
        wanted: dict[tuple[DeviceKind, ...], int] = {}
        for need in needs:
            slot = self.made.get(need.key)
            if need.allocated is not None:
                allowed &= self._where(need.allocated)
            elif slot is not None:
                allowed &= np.arange(self.size) == slot
            else:
                for request in need.requests:
                    kinds = tuple(self.matching(request))
                    if request.all_devices:
                        total = self._count(kinds, free=False)
                        allowed &= (total > 0) & (self._count(kinds, free=True) == total)
                        allowed &= ~self.incomplete
                    else:
                        wanted[kinds] = wanted.get(kinds, 0) + request.count
        for kinds, count in wanted.items():
            allowed &= self._count(kinds, free=True) >= count
        return allowed

    def counts(self) -> tuple[Counts, Counts]:
        """Per node slot: its devices, and how many of them are free."""
        kinds = self._kinds.kinds
        return self._count(kinds, free=False), self._count(kinds, free=True)

    def _where(self, devices: Sequence[DeviceId]) -> BoolArray:
        """The nodes a claim allocated to these devices can be used on."""
        node_of = self.book.pools().node_of
        nodes = {node_of[device] for device in devices if device in node_of}
        where = np.zeros(self.size, dtype=np.bool_)
        if not nodes:
            where[:] = True  # devices not on a known node: not restricted here
        for node in nodes:
            slot = self._node_slot(node)
            if slot is not None and slot < self.size:
                where[slot] = True
        return where

    # ---- the allocation, on one node -----------------------------------------------

    def take(self, needs: Sequence[Need], slot: int) -> bool:
        """Allocate the pod's claims not allocated yet on the node; False (and nothing
        taken) when they cannot all be."""
        if not self.allowed(needs)[slot]:
            return False
        pending = [need for need in needs if need.allocated is None and need.key not in self.made]
        on_node = self._kinds.devices.get(slot, {})
        free = {
            kind: [device for device in devices if device.id not in self.taken]
            for kind, devices in on_node.items()
        }
        requests = [request for need in pending for request in need.requests]
        chosen = _search(requests, 0, {kind: len(items) for kind, items in free.items()}, self)
        if chosen is None:
            return False
        for kind, count in chosen.items():
            for device in free[kind][:count]:
                self.taken.add(device.id)
                self.taken_count[kind][slot] += 1
        for need in pending:
            self.made[need.key] = slot
        return True


def _search(
    requests: Sequence[Request], index: int, free: Mapping[DeviceKind, int], ledger: DeviceLedger
) -> dict[DeviceKind, int] | None:
    """How many devices of each kind the requests from `index` on take, or None."""
    if index == len(requests):
        return {}
    request = requests[index]
    kinds = [kind for kind in ledger.matching(request) if kind in free]
    for split in _splits(request, kinds, free):
        rest = {kind: count - split.get(kind, 0) for kind, count in free.items()}
        found = _search(requests, index + 1, rest, ledger)
        if found is not None:
            for kind, count in split.items():
                found[kind] = found.get(kind, 0) + count
            return found
    return None


def _splits(
    request: Request, kinds: Sequence[DeviceKind], free: Mapping[DeviceKind, int]
) -> Iterator[dict[DeviceKind, int]]:
    """The ways the request can take its devices from the free ones, by kind."""
    if request.all_devices:
        if kinds:
            yield {kind: free[kind] for kind in kinds}
        return
    yield from _spread(request.count, list(kinds), free)


def _spread(
    count: int, kinds: list[DeviceKind], free: Mapping[DeviceKind, int]
) -> Iterator[dict[DeviceKind, int]]:
    if count == 0:
        yield {}
        return
    if not kinds:
        return
    first, rest = kinds[0], kinds[1:]
    for taken in range(min(count, free[first]), -1, -1):
        for others in _spread(count - taken, rest, free):
            yield {first: taken, **others} if taken else others


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
        (need.requests, need.allocated, need.key if need.shared else None) for need in needs
    )


def cycle_ledger(state: ClusterState, size: int) -> DeviceLedger | None:
    """The cycle's devices, with those of pods placed before it taken: bound pods' claims
    are allocated in their status, and the claims of an admitted gang's pods not bound
    yet are allocated on their planned node. None where no device is published or
    claimed."""
    book = state.devices
    if not book.used:
        return None
    ledger = DeviceLedger(book, state.node_slot, size)
    for key in sorted(book.claimants):
        entry = state.pods.get(key)
        slot = None if entry is None else state.node_slot(entry.taken_on or "")
        if entry is None or slot is None or slot >= size:
            continue
        needs = needs_of(state, entry.record)
        if not isinstance(needs, str):
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
    total, free = ledger.counts()
    found = [
        NodeDevices(table.name(int(slot)), int(free[slot]), int(total[slot]))
        for slot in np.flatnonzero(total)
        if table.records[int(slot)] is not None
    ]
    return tuple(sorted(found, key=lambda item: (-item.free, item.node)))
