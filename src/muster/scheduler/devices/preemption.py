"""Preemption that frees devices: the devices allocated to the victims' claims make room
too.

The victim search (`preemption`) weighs what each candidate frees per node; here the
devices allocated to its claims are one more column of it, and the devices a gang's pods ask
for one more column of their demand, so the victims chosen on a node are those that
free enough of its devices as well as of its cpu and memory. Counted so, devices are
alike; which ones the claims can really get is then settled by an allocation: while
the search tries placements, the gang's claims are allocated as if every candidate
had gone (the placement must also keep within the column's counts); the plan it
returns is kept only if the claims can be allocated once its victims, and only they,
are gone (`verified`). A claim named in pods' specs is never counted as freed, as
other pods may still use it.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from muster.scheduler.decisions.results import Victim
from muster.scheduler.devices.book import Need
from muster.scheduler.devices.gang import GangDevices, needs_of
from muster.scheduler.devices.ledger import DeviceLedger
from muster.scheduler.placement.fit import Matrix
from muster.scheduler.placement.interplay import GangInterplay
from muster.scheduler.placement.topology import GangPlacement
from muster.scheduler.state.state import ClusterState

Counts = npt.NDArray[np.int64]
Demand = tuple[tuple[int, int], ...]


def claimed_devices(state: ClusterState, ledger: DeviceLedger) -> Counts:
    """Per pod slot, the devices allocated to its claims (but claims named in pods'
    specs)."""
    claimed = np.zeros(len(state.pod_keys), dtype=np.int64)
    for key in state.devices.claimants:
        entry = state.pods.get(key)
        if entry is None or entry.taken_on is None:
            continue
        needs = needs_of(state, entry.record)
        if isinstance(needs, str):
            continue
        claimed[entry.slot] = sum(
            len(need.allocated)
            if need.allocated is not None
            else len(ledger.devices_of.get(need.key, ()))
            for need in needs
            if not need.shared
        )
    return claimed


def without(ledger: DeviceLedger, state: ClusterState, slots: Collection[int]) -> DeviceLedger:
    """The devices once the pods of these slots are gone."""
    twin = ledger.copy()
    for slot in sorted(slots):
        key = state.pod_keys[slot]
        entry = None if key is None else state.pods.get(key)
        if entry is not None and entry.record.device_claims:
            needs = needs_of(state, entry.record)
            if not isinstance(needs, str):
                twin.deallocate(needs)
    return twin


def _asked(needs: tuple[Need, ...]) -> int:
    """How many devices the pod's claims not allocated yet ask for, at least."""
    return sum(
        min(option.count if not option.all_devices else 0 for option in request.options)
        for need in needs
        if need.allocated is None
        for request in need.requests
    )


@dataclass(frozen=True, slots=True)
class DevicePreemption:
    """One gang's preemption over devices: its claims and the cycle's devices."""

    state: ClusterState
    ledger: DeviceLedger  # the cycle's, the victims' devices still taken
    needs: Mapping[str, tuple[Need, ...]]  # by pod name
    interplay: GangInterplay | None  # the gang's rules, its claims on the hopeful ledger

    @staticmethod
    def of(
        state: ClusterState,
        ledger: DeviceLedger,
        interplay: GangInterplay | None,
        candidates: Collection[int],
    ) -> DevicePreemption:
        """`candidates`: the pod slots the gang may take as victims."""
        if interplay is None or interplay.devices is None:
            return DevicePreemption(state, ledger, {}, interplay)
        hopeful = copy.copy(interplay)
        needs = interplay.devices.needs
        hopeful.devices = GangDevices(without(ledger, state, candidates), needs)
        return DevicePreemption(state, ledger, needs, hopeful)

    def free(self, free: Matrix) -> Matrix:
        """The free capacity with the free devices per node as one more column."""
        room = self.ledger.where.total - self.ledger.taken_on
        return np.hstack([free, room[: free.shape[0], None]])

    def demands(self, demands: Mapping[str, Demand], column: int) -> dict[str, Demand]:
        """The gang's pods' demands with the devices they ask for in `column`."""
        return {
            pod: (*demand, (column, _asked(self.needs.get(pod, ()))))
            for pod, demand in demands.items()
        }

    def within(self, placement: GangPlacement, room: Counts) -> GangPlacement:
        """The placement, if it asks no node for more devices than `room` has free."""
        asked = np.zeros(room.size, dtype=np.int64)
        for pod, slot in placement.placements.items():
            asked[slot] += _asked(self.needs.get(pod, ()))
        if (asked <= room).all():
            return placement
        return GangPlacement({}, None, placement.fits, 0, placement.key)

    def verified(
        self, victims: tuple[Victim, ...], placements: dict[str, int]
    ) -> DeviceLedger | None:
        """The devices once the victims are gone and the gang's claims allocated, or
        None when they cannot all be (the plan is then not made)."""
        slots = [self.state.pods[victim.pod].slot for victim in victims]
        ledger = without(self.ledger, self.state, slots)
        for pod, slot in placements.items():
            if not ledger.take(self.needs.get(pod, ()), slot):
                return None
        return ledger
