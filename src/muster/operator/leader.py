"""Leader election through a `coordination.k8s.io/v1` Lease, as client-go does it.

Only the leader runs informers and the scheduling loop (two loops would release the
same gang twice); every replica serves webhooks. The leader renews the Lease every
`renew_period`; a standby takes it over once `lease_duration` has passed without a
renewal, so with the defaults (10 s, renewed every 2 s) a standby leads within about
12 s of the leader's death. Updates carry the Lease's resourceVersion, so two
standbys racing for an expired Lease cannot both win. A leader that fails to renew
before its own Lease would expire steps down rather than risk a split brain.
"""

from __future__ import annotations

import asyncio
import logging
import time

from muster.api.times import rfc3339
from muster.operator.kube import JsonObject, Kube, KubeError
from muster.scheduler.times import parse_time

logger = logging.getLogger(__name__)


class LeaderElector:
    """Acquires and keeps a Lease; `leading` is set while this replica holds it."""

    def __init__(
        self,
        kube: Kube,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float,
        renew_period: float,
    ) -> None:
        self.kube = kube
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_period = renew_period
        self.leading = asyncio.Event()
        self.lost = asyncio.Event()

    async def run(self) -> None:
        """Try to lead forever; set `lost` (and stop) if leadership is lost once held."""
        last_renewal = 0.0
        while True:
            try:
                held = await self._try_acquire_or_renew()
            except (TimeoutError, KubeError, OSError) as error:
                logger.warning("lease %s/%s: %s", self.namespace, self.name, error)
                held = False
            now = time.time()
            if held:
                last_renewal = now
                if not self.leading.is_set():
                    logger.info("leading as %s", self.identity)
                    self.leading.set()
            elif self.leading.is_set() and now - last_renewal >= self.lease_duration:
                logger.error("lost the lease %s/%s; stepping down", self.namespace, self.name)
                self.leading.clear()
                self.lost.set()
                return
            await asyncio.sleep(self.renew_period)

    async def release(self) -> None:
        """Give the Lease up on a clean shutdown so a standby need not wait it out."""
        if not self.leading.is_set():
            return
        try:
            lease = await self.kube.request("GET", f"{self.path}/{self.name}")
            if (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = None
                lease["spec"]["leaseDurationSeconds"] = 1
                await self.kube.request("PUT", f"{self.path}/{self.name}", body=lease)
        except (KubeError, OSError) as error:
            logger.warning("could not release the lease: %s", error)

    async def _try_acquire_or_renew(self) -> bool:
        now = time.time()
        try:
            lease = await self.kube.request("GET", f"{self.path}/{self.name}")
        except KubeError as error:
            if not error.not_found:
                raise
            return await self._create(now)
        spec: JsonObject = lease.setdefault("spec", {})
        holder = spec.get("holderIdentity")
        renewed = parse_time(spec.get("renewTime")) or 0.0
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and now < renewed + duration:
            return False
        if holder != self.identity:
            spec["acquireTime"] = rfc3339(now, micro=True)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = round(self.lease_duration)
        spec["renewTime"] = rfc3339(now, micro=True)
        try:
            await self.kube.request("PUT", f"{self.path}/{self.name}", body=lease)
        except KubeError as error:
            if error.conflict:
                return False
            raise
        return True

    async def _create(self, now: float) -> bool:
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": round(self.lease_duration),
                "acquireTime": rfc3339(now, micro=True),
                "renewTime": rfc3339(now, micro=True),
                "leaseTransitions": 0,
            },
        }
        try:
            await self.kube.request("POST", self.path, body=lease)
        except KubeError as error:
            if error.conflict:
                return False
            raise
        return True
