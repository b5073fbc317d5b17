"""One cycle's devices: where each is, which are taken, and an allocation on one node.

kube-scheduler's allocator (`structured` in its source) gives a claim's request the
devices of its node that no claim holds and that every selector of the request's class
and of the request itself selects, searching every combination for the first that
satisfies all the pod's requests at once. Here the same search (`search`) runs
on the one node a pod is planned on (`DeviceLedger.take`); which nodes can take the pod at all is
answered first for every node at once from counts (`allowed`): per selection (a
class's selectors and a request's), how many matching devices each node has free.

What does not change between cycles is made once and kept on the book (`_Located`:
the devices per node, which devices each selection matches, for one version of the
slices and of the node set), so a cycle only copies it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from muster.scheduler.devices.book import DeviceBook, Need
from muster.scheduler.devices.intake import DeviceId, Request
from muster.scheduler.devices.search import Typed, Wanted, attribute_of, choose
from muster.scheduler.devices.selectors import Case, DeviceKind, Judgement, selects
from muster.scheduler.rules.taints import Taint, Toleration, first_untolerated

BoolArray = npt.NDArray[np.bool_]
Counts = npt.NDArray[np.int64]
# The class's and the request's expressions, and the request's tolerations of device
# taints; None: its class is not known.
Selection = tuple[tuple[str, ...], tuple[Toleration, ...]] | None


@dataclass(slots=True)
class _Located:
    """The devices per node slot, for one version of the slices and the node set: each
    device has a number, so sets of devices are boolean arrays."""

    ids: list[DeviceId]  # by number
    kinds: list[DeviceKind]  # by number
    taints: list[tuple[Taint, ...]]  # by number
    number: dict[DeviceId, int]
    slot: Counts  # by number: its node slot
    on_slot: dict[int, list[int]]  # numbers, by device id
    total: Counts  # devices per slot
    incomplete: BoolArray  # slots with an incomplete pool
    judged: dict[Case, Judgement]  # the book's judgements of selector cases
    matched: dict[Selection, tuple[BoolArray, Counts]] = field(default_factory=dict)

    def attribute(self, number: int, name: str) -> Typed | None:
        """The device's value of the (fully qualified) attribute."""
        return attribute_of(self.kinds[number], name)

    def matching(self, selection: Selection) -> tuple[BoolArray, Counts]:
        """Which devices the selection selects (by number), and how many per slot."""
        found = self.matched.get(selection)
        if found is None:
            mask = np.fromiter(
                (
                    selection is not None
                    and selects(selection[0], kind, self.judged)
                    and first_untolerated(taints, selection[1]) is None
                    for kind, taints in zip(self.kinds, self.taints, strict=True)
                ),
                dtype=np.bool_,
                count=len(self.kinds),
            )
            counts = np.bincount(self.slot[mask], minlength=self.total.size).astype(np.int64)
            found = self.matched[selection] = (mask, counts)
        return found


def _located(book: DeviceBook, node_slot: Callable[[str], int | None], size: int) -> _Located:
    pools = book.pools()
    ids: list[DeviceId] = []
    kinds: list[DeviceKind] = []
    taints: list[tuple[Taint, ...]] = []
    slots: list[int] = []
    on_slot: dict[int, list[int]] = {}
    incomplete = np.zeros(size, dtype=np.bool_)
    for node, devices in pools.on_node.items():
        slot = node_slot(node)
        if slot is None or slot >= size:
            continue
        numbers = on_slot[slot] = []
        for device in sorted(devices, key=lambda item: item.id):
            numbers.append(len(ids))
            ids.append(device.id)
            kinds.append(device.kind)
            taints.append(device.taints)
            slots.append(slot)
        incomplete[slot] = node in pools.incomplete
    slot_of = np.array(slots, dtype=np.int64)
    total = np.bincount(slot_of, minlength=size).astype(np.int64)
    number = {device: index for index, device in enumerate(ids)}
    return _Located(ids, kinds, taints, number, slot_of, on_slot, total, incomplete, book.judged)


def located(
    book: DeviceBook, node_slot: Callable[[str], int | None], size: int, table: object
) -> _Located:
    """The devices per slot of this node set (`table`), kept on the book until the
    slices or the node set change. Which devices a selection matches is kept with it:
    a selection is only matched once the book has judged every case it needs (a pod
    whose claims wait for a judgement has no needs yet)."""
    kept = book.derived.get("located")
    key = (book.slices_version, size)
    if kept is not None and kept[0] == key and kept[1] is table:
        found: _Located = kept[2]
        return found
    found = _located(book, node_slot, size)
    book.derived["located"] = (key, table, found)
    return found


class DeviceLedger:
    """The devices of one cycle and which are taken: allocated in claims' status, or
    by pods planned before, this cycle or in an admitted gang's plan."""

    def __init__(self, book: DeviceBook, where: _Located, *, empty: bool = False) -> None:
        self.book = book
        self.where = where
        self.size = int(where.total.size)
        self.taken = np.zeros(len(where.ids), dtype=np.bool_)  # by device number
        self.taken_on = np.zeros(self.size, dtype=np.int64)  # devices taken per slot
        self.made: dict[Hashable, int] = {}  # claim -> the slot it was allocated on
        self.devices_of: dict[Hashable, list[int]] = {}  # claim -> the devices it was given
        self.pinned: dict[Hashable, int] = {}  # claim -> the only slot to allocate it on
        self._free: dict[Selection, Counts] = {}
        if not empty:
            number = where.number
            self._mark([number[device] for device in book.allocated() if device in number])

    def copy(self, pins: Mapping[Hashable, int] | None = None) -> DeviceLedger:
        """A copy to take devices from, with these claims pinned to these slots."""
        twin = DeviceLedger.__new__(DeviceLedger)
        twin.book, twin.where, twin.size = self.book, self.where, self.size
        twin.taken = self.taken.copy()
        twin.taken_on = self.taken_on.copy()
        twin.made = dict(self.made)
        twin.devices_of = dict(self.devices_of)
        twin.pinned = {**self.pinned, **(pins or {})}
        twin._free = {selection: free.copy() for selection, free in self._free.items()}
        return twin

    def free_per_slot(self) -> Counts:
        """Per slot: its devices no claim holds."""
        free: Counts = self.where.total - self.taken_on
        return free

    def free_on(self, slot: int) -> int:
        """The slot's devices no claim holds."""
        return int(self.where.total[slot] - self.taken_on[slot])

    def taken_ids(self) -> set[DeviceId]:
        return {self.where.ids[number] for number in np.flatnonzero(self.taken)}

    def _mark(self, numbers: Sequence[int]) -> None:
        fresh = np.array(sorted(set(numbers)), dtype=np.int64)
        fresh = fresh[~self.taken[fresh]]
        if not fresh.size:
            return
        self.taken[fresh] = True
        slots = self.where.slot[fresh]
        np.add.at(self.taken_on, slots, 1)
        for selection, free in self._free.items():
            matched = self.where.matching(selection)[0]
            np.subtract.at(free, slots[matched[fresh]], 1)

    def deallocate(self, needs: Sequence[Need]) -> None:
        """Deallocate the claims of a pod that leaves (a victim of preemption), but a
        claim named in pods' specs, which other pods may still use."""
        numbers: list[int] = []
        for need in needs:
            if need.shared:
                continue
            if need.allocated is not None:
                numbers += [self.where.number[d] for d in need.allocated if d in self.where.number]
            elif need.key in self.made:
                del self.made[need.key]
                numbers += self.devices_of.pop(need.key, [])
        self._unmark(numbers)

    def take_devices(self, devices: Iterable[DeviceId]) -> None:
        """Count these devices taken (allocated to claims since)."""
        number = self.where.number
        self._mark([number[device] for device in devices if device in number])

    def deallocate_devices(self, devices: Iterable[DeviceId]) -> None:
        """Count these devices free again (their claims were deallocated since)."""
        number = self.where.number
        self._unmark([number[device] for device in devices if device in number])

    def _unmark(self, numbers: Sequence[int]) -> None:
        fresh = np.array(sorted(set(numbers)), dtype=np.int64)
        fresh = fresh[self.taken[fresh]]
        if not fresh.size:
            return
        self.taken[fresh] = False
        slots = self.where.slot[fresh]
        np.subtract.at(self.taken_on, slots, 1)
        for selection, free in self._free.items():
            matched = self.where.matching(selection)[0]
            np.add.at(free, slots[matched[fresh]], 1)

    # ---- which nodes, at once ------------------------------------------------------

    def selection(self, request: Request) -> Selection:
        """What selects the request's devices: its class's selectors, then its own, and
        the device taints it tolerates (a device with another is not allocated)."""
        selectors = self.book.classes.get(request.class_name)
        if selectors is None:
            return None
        return (*selectors, *request.selectors), request.tolerations

    def free(self, selection: Selection) -> Counts:
        """Per slot: the devices the selection selects that nothing holds."""
        found = self._free.get(selection)
        if found is None:
            matched, counts = self.where.matching(selection)
            taken = self.where.slot[matched & self.taken]
            found = counts - np.bincount(taken, minlength=self.size)
            self._free[selection] = found
        return found

    def allowed(self, needs: Sequence[Need]) -> BoolArray:
        """Nodes where the pod's claims could be allocated, as far as counts tell: a
        claim allocated already is where its devices are; the others need enough free
        devices of what they ask for (and, for all devices, every one of them free)."""
        allowed = np.ones(self.size, dtype=np.bool_)
        wanted: dict[Selection, int] = {}
        for need in needs:
            slot = self.made.get(need.key)
            if need.allocated is not None:
                allowed &= self._nodes_of(need.allocated)
            elif slot is not None:
                allowed &= np.arange(self.size) == slot
            else:
                if need.key in self.pinned:
                    allowed &= np.arange(self.size) == self.pinned[need.key]
                for request in need.requests:
                    if request.alternatives:  # any of them may do (counted alone)
                        allowed &= np.logical_or.reduce(
                            [self._room(option) for option in request.alternatives]
                        )
                    elif request.all_devices:
                        allowed &= self._room(request)
                    else:
                        selection = self.selection(request)
                        wanted[selection] = wanted.get(selection, 0) + request.count
        for selection, count in wanted.items():
            allowed &= self.free(selection) >= count
        return allowed

    def _room(self, request: Request) -> BoolArray:
        """Nodes with room for the request alone."""
        selection = self.selection(request)
        if not request.all_devices:
            return self.free(selection) >= request.count
        total = self.where.matching(selection)[1]
        room: BoolArray = (total > 0) & (self.free(selection) == total) & ~self.where.incomplete
        return room

    def _nodes_of(self, devices: Sequence[DeviceId]) -> BoolArray:
        """The nodes a claim allocated to these devices can be used on."""
        number = self.where.number
        slots = sorted({int(self.where.slot[number[d]]) for d in devices if d in number})
        where = np.zeros(self.size, dtype=np.bool_)
        if not slots:
            where[:] = True  # devices on no known node: not restricted here
        where[slots] = True
        return where

    # ---- the allocation, on one node -----------------------------------------------

    def take(self, needs: Sequence[Need], slot: int) -> bool:
        """Allocate the pod's claims not allocated yet on the node; False (and nothing
        taken) when they cannot all be."""
        pending = [need for need in needs if need.allocated is None and need.key not in self.made]
        if not pending:
            return True  # its claims are allocated already, where they are
        if not self.allowed(needs)[slot]:
            return False
        free = [number for number in self.where.on_slot.get(slot, ()) if not self.taken[number]]
        wanted = [
            Wanted(
                tuple(
                    (option, self.where.matching(self.selection(option))[0])
                    for option in request.options
                ),
                tuple(
                    ((index, place), constraint.attribute)
                    for place, constraint in enumerate(need.constraints)
                    if not constraint.requests or request.name in constraint.requests
                ),
            )
            for index, need in enumerate(pending)
            for request in need.requests
        ]
        chosen = choose(wanted, free, self.where.attribute)
        if chosen is None:
            return False
        self._mark([number for pick in chosen for number in pick])
        picks = iter(chosen)
        for need in pending:
            self.made[need.key] = slot
            self.devices_of[need.key] = [n for _ in need.requests for n in next(picks)]
        return True
