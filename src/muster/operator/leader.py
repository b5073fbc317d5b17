"""Leader election through a `coordination.k8s.io/v1` Lease, as client-go does it.

Only the leader runs informers and the scheduling loop (two loops would release the
same gang twice); every replica serves webhooks. Three durations, client-go's:

- `lease_duration` (15 s): a standby takes the Lease over once it has seen the
  Lease's record unchanged for this long. It measures on its own clock from the moment
  it *saw* a change, never from the timestamps in the Lease, so skewed clocks
  between replicas cannot shorten the wait.
- `renew_deadline` (10 s): the leader counts itself the leader only until this long
  after the start of its last successful renewal. `lease_left()` answers how long that
  still is, with no request: it reaches 0 on time even when the process was frozen
  (SIGSTOP) or the machine suspended, and wakes up far past its Lease.
- `retry_period` (2 s): between renewals, and (jittered) between attempts to acquire.

Since the renewal the leader counts from started before its record was written, and
the standby starts counting only once it has read that record, the leader stops
believing it leads at least `lease_duration - renew_deadline` before any standby can
take over. Every write of the leader is fenced by that (`Kube.view(fence=...)`): it is
sent only while `lease_left()` is positive, and it must be answered within what is
left, its deadline told to the API server too, so a write cannot wait for a
connection or for the server past the moment the leader stops believing it leads.
The margin of `lease_duration - renew_deadline` is for what no client can take back:
a write the server is already carrying out when its deadline passes. Once it has
stopped leading, the elector ends; the process then exits and comes back as a
standby.

Every duration is measured on `lease_clock`: `CLOCK_BOOTTIME` on Linux, which keeps
counting while the machine (or its VM) is suspended, where `CLOCK_MONOTONIC` stops,
and would let a leader that slept through its Lease wake believing it still holds it.
Where the platform has no such clock (not Linux), the monotonic clock, with that
blind spot.

Each attempt (a read and a write) is bounded well below the renew deadline, so one
hanging request cannot use it up. Updates carry the Lease's resourceVersion, so two
standbys racing for an expired Lease cannot both win.

A leader whose elector is cancelled (a clean stop) gives the Lease up on its way out,
as client-go's `ReleaseOnCancel` does: the record then names no holder and lasts one
second, so a standby takes it at its next attempt instead of waiting out
`lease_duration`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from muster.api.times import rfc3339
from muster.api.wire import JsonObject
from muster.client.kube import Kube, KubeError
from muster.client.paths import LEASES, namespaced
from muster.client.retry import jittered

logger = logging.getLogger(__name__)

JITTER = 1.2  # client-go's JitterFactor for the acquire loop


def clock_counting_suspension(clock_id: int | None) -> Callable[[], float]:
    """Seconds on the clock `clock_id` of `time.clock_gettime` (the monotonic clock
    when None: the platform has no clock that counts suspension)."""
    if clock_id is None:
        return time.monotonic
    return lambda: time.clock_gettime(clock_id)


lease_clock = clock_counting_suspension(getattr(time, "CLOCK_BOOTTIME", None))


@dataclass(frozen=True, slots=True)
class LeaseTiming:
    """The three durations, checked as client-go checks them."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("the lease duration must be longer than the renew deadline")
        if not self.renew_deadline > JITTER * self.retry_period:
            raise ValueError(f"the renew deadline must exceed {JITTER} x the retry period")
        if self.retry_period <= 0:
            raise ValueError("the retry period must be positive")

    @property
    def attempt_timeout(self) -> float:
        """The longest one read-and-write attempt may take: half the renew deadline."""
        return self.renew_deadline / 2


def _record(spec: JsonObject) -> tuple[object, ...]:
    """What identifies one write of the Lease: any renewal changes it."""
    return tuple(
        spec.get(key)
        for key in (
            "holderIdentity",
            "leaseDurationSeconds",
            "acquireTime",
            "renewTime",
            "leaseTransitions",
        )
    )


class LeaderElector:
    """Acquires and keeps a Lease; `still_leading()` says whether this replica may write.

    `leading` is set once the Lease is first acquired; `run` returns when leadership,
    once won, is lost (and never on its own before that). Every duration is measured
    on `clock` (`lease_clock`); a test gives the clock of its own event loop.
    """

    def __init__(
        self,
        kube: Kube,
        *,
        name: str,
        namespace: str,
        identity: str,
        timing: LeaseTiming,
        clock: Callable[[], float] = lease_clock,
    ) -> None:
        self.kube = kube
        self.path = namespaced(LEASES, namespace)
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.timing = timing
        self.clock = clock
        self.leading = asyncio.Event()
        self._renewed_at: float | None = None  # start of the last good renewal (`clock`)
        self._observed: tuple[object, ...] | None = None
        self._observed_at = 0.0  # when the observed record was first seen (`clock`)
        self._stopped = False
        self._unconditional = False

    def lead_unconditionally(self) -> None:
        """Lead without a Lease (leader election off: one replica, by the operator's word)."""
        self._unconditional = True
        self.leading.set()

    def lease_left(self) -> float:
        """Seconds this replica may still act as the leader: until the renew deadline
        after the start of its last successful renewal; 0 once past it (or stopped),
        infinite when it leads without a Lease.

        Cheap (no request): the leader's client asks before every single write, and
        takes it as the write's deadline.
        """
        if self._unconditional:
            return math.inf
        if self._stopped or self._renewed_at is None:
            return 0.0
        return max(0.0, self._renewed_at + self.timing.renew_deadline - self.clock())

    def still_leading(self) -> bool:
        """Whether this replica can prove it still holds the Lease, right now: callers
        ask before every batch of writes."""
        return self.lease_left() > 0

    async def run(self) -> None:
        """Acquire the Lease (retrying forever), then renew it until that fails.

        Cancelled while leading, it gives the Lease up before it ends.
        """
        logger.info("attempting to acquire the lease %s/%s", self.namespace, self.name)
        while not await self._attempt():
            await asyncio.sleep(jittered(self.timing.retry_period, JITTER - 1))
        logger.info("leading as %s", self.identity)
        self.leading.set()
        try:
            await self._renew()
        except asyncio.CancelledError:
            await self._give_up()
            raise
        finally:
            self._stopped = True
        logger.error("lost the lease %s/%s; stepping down", self.namespace, self.name)

    async def _renew(self) -> None:
        """Renew every retry period; return once the renew deadline cannot be met."""
        while True:
            await asyncio.sleep(self.timing.retry_period)
            while True:
                if not self.still_leading():
                    return
                if await self._attempt():
                    break
                if self._held_by_another():
                    return
                await asyncio.sleep(self.timing.retry_period)

    async def _give_up(self) -> None:
        """Give the Lease up (client-go's release), if this replica can prove it holds it.

        Nothing may be written as the leader from here on: the fence turns away any
        write still on its way, so none can follow the release.
        """
        if not self.still_leading():
            return
        self._stopped = True
        try:
            async with asyncio.timeout(self.timing.attempt_timeout):
                lease = await self.kube.request("GET", f"{self.path}/{self.name}")
                spec: JsonObject = lease.setdefault("spec", {})
                if spec.get("holderIdentity") != self.identity:
                    return
                now = rfc3339(time.time(), micro=True)
                spec.update(
                    holderIdentity="", leaseDurationSeconds=1, acquireTime=now, renewTime=now
                )
                await self.kube.request("PUT", f"{self.path}/{self.name}", body=lease)
        except (KubeError, TimeoutError) as error:
            logger.warning("could not give the lease up: %s", error or "timed out")
            return
        logger.info("gave the lease %s/%s up", self.namespace, self.name)

    def _held_by_another(self) -> bool:
        if self._observed is None:
            return False
        holder = self._observed[0]
        return bool(holder) and holder != self.identity

    async def _attempt(self) -> bool:
        """One try to acquire or renew; every failure is an answer of False."""
        started = self.clock()
        try:
            async with asyncio.timeout(self.timing.attempt_timeout):
                won = await self._try_acquire_or_renew()
        except (KubeError, TimeoutError, ValueError) as error:
            logger.warning("lease %s/%s: %s", self.namespace, self.name, error or "timed out")
            return False
        if won:
            self._renewed_at = started
        return won

    async def _try_acquire_or_renew(self) -> bool:
        timeout = self.timing.attempt_timeout
        asked_at = self.clock()
        try:
            lease = await self.kube.request("GET", f"{self.path}/{self.name}", timeout=timeout)
        except KubeError as error:
            if not error.not_found:
                raise
            return await self._create()
        spec: JsonObject = lease.setdefault("spec", {})
        record = _record(spec)
        if record != self._observed:
            self._observed, self._observed_at = record, self.clock()
        holder = spec.get("holderIdentity")
        duration = float(spec.get("leaseDurationSeconds") or self.timing.lease_duration)
        if holder and holder != self.identity and self.clock() < self._observed_at + duration:
            return False
        if self.clock() - asked_at > timeout:
            # Frozen while reading (or just slow): what was read may be long stale.
            raise TimeoutError
        now = time.time()
        if holder != self.identity:
            spec["acquireTime"] = rfc3339(now, micro=True)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = round(self.timing.lease_duration)
        spec["renewTime"] = rfc3339(now, micro=True)
        return await self._written("PUT", f"{self.path}/{self.name}", lease, timeout)

    async def _create(self) -> bool:
        now = time.time()
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": round(self.timing.lease_duration),
            "acquireTime": rfc3339(now, micro=True),
            "renewTime": rfc3339(now, micro=True),
            "leaseTransitions": 0,
        }
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": spec,
        }
        return await self._written("POST", self.path, lease, self.timing.attempt_timeout)

    async def _written(self, method: str, path: str, lease: JsonObject, timeout: float) -> bool:
        """Write the Lease; False when another replica wrote it first (a conflict)."""
        try:
            await self.kube.request(method, path, body=lease, timeout=timeout)
        except KubeError as error:
            if error.conflict:
                return False
            raise
        self._observed, self._observed_at = _record(lease["spec"]), self.clock()
        return True
