"""Leader election against an in-memory Lease: one leader, deadlines, every failure survived,
the Lease given up on a clean stop. On a virtual clock, with client-go's own durations."""

from __future__ import annotations

import asyncio
import copy
import math
import time
from typing import Any

import pytest

from muster.api.wire import JsonObject
from muster.client.kube import KubeError, UnreachableError
from muster.operator.leader import (
    LeaderElector,
    LeaseTiming,
    clock_counting_suspension,
    lease_clock,
)
from tests.unit.operator.virtual_time import on_virtual_time

TIMING = LeaseTiming()  # 15 s, 10 s, 2 s
PATH = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


class LeaseServer:
    """One Lease with optimistic concurrency, as the API server keeps it."""

    def __init__(self) -> None:
        self.lease: JsonObject | None = None
        self.version = 0
        self.writes: list[str] = []  # holder of each successful write

    def handle(self, method: str, body: Any) -> JsonObject:
        if method == "GET":
            if self.lease is None:
                raise KubeError(404, "NotFound", "no lease")
            return copy.deepcopy(self.lease)
        if method == "POST" and self.lease is not None:
            raise KubeError(409, "AlreadyExists", "lease exists")
        if method == "PUT":
            assert self.lease is not None
            sent = body["metadata"].get("resourceVersion")
            if sent != self.lease["metadata"]["resourceVersion"]:
                raise KubeError(409, "Conflict", "stale resourceVersion")
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        self.writes.append(str(body["spec"].get("holderIdentity")))
        return copy.deepcopy(self.lease)


class Client:
    """One replica's connection to the LeaseServer, which a test can break or stall."""

    def __init__(self, server: LeaseServer) -> None:
        self.server = server
        self.failure: Exception | None = None
        self.stalled = False
        self.reads = 0  # one per attempt to acquire or renew, and per release

    async def request(
        self, method: str, path: str, *, body: Any = None, timeout: float = 30.0
    ) -> JsonObject:
        assert path.startswith(PATH)
        if self.stalled:
            await asyncio.Event().wait()
        if self.failure is not None:
            raise self.failure
        await asyncio.sleep(0)
        self.reads += method == "GET"
        return self.server.handle(method, body)


def elector(client: Client, identity: str) -> LeaderElector:
    return LeaderElector(
        client,  # type: ignore[arg-type]
        name="muster-operator",
        namespace="default",
        identity=identity,
        timing=TIMING,
        clock=asyncio.get_running_loop().time,
    )


@on_virtual_time
async def test_one_of_two_leads_and_the_other_waits() -> None:
    server = LeaseServer()
    first, second = elector(Client(server), "a"), elector(Client(server), "b")
    tasks = [asyncio.create_task(first.run()), asyncio.create_task(second.run())]
    await first.leading.wait()
    await asyncio.sleep(TIMING.lease_duration * 3)  # renewals keep the standby out
    assert first.still_leading() and not second.still_leading()
    assert not second.leading.is_set()
    assert set(server.writes) == {"a"}
    for task in tasks:
        task.cancel()


@on_virtual_time
async def test_a_leader_that_cannot_renew_stops_writing_before_the_standby_takes_over() -> None:
    server = LeaseServer()
    leader_client = Client(server)
    leader, standby = elector(leader_client, "a"), elector(Client(server), "b")
    leader_task = asyncio.create_task(leader.run())
    await leader.leading.wait()
    standby_task = asyncio.create_task(standby.run())
    leader_client.failure = UnreachableError("ServerDisconnectedError()", unsent=False)
    step = 0.01
    stopped_at = took_over_at = None
    loop = asyncio.get_running_loop()
    while took_over_at is None:
        await asyncio.sleep(step)
        if stopped_at is None and not leader.still_leading():
            stopped_at = loop.time()
        if standby.still_leading():
            took_over_at = loop.time()
    assert stopped_at is not None
    assert took_over_at - stopped_at >= TIMING.lease_duration - TIMING.renew_deadline - step
    await leader_task  # the elector ends by itself: the process exits
    standby_task.cancel()


@on_virtual_time
async def test_a_hanging_request_does_not_outlive_the_renew_deadline() -> None:
    server = LeaseServer()
    client = Client(server)
    leader = elector(client, "a")
    task = asyncio.create_task(leader.run())
    await leader.leading.wait()
    client.stalled = True
    await asyncio.sleep(TIMING.renew_deadline)
    assert not leader.still_leading()  # by the deadline, though its requests hang
    # The attempt under way when the deadline passed is cut off, and the elector ends.
    await asyncio.wait_for(task, TIMING.attempt_timeout + TIMING.retry_period)


@pytest.mark.parametrize(
    "failure",
    [
        UnreachableError("ClientPayloadError()", unsent=False),
        KubeError(500, "InternalError", "etcd leader changed"),
        KubeError(403, "Forbidden", "no RBAC yet"),
        ValueError("not JSON"),
    ],
)
@on_virtual_time
async def test_a_standby_survives_any_client_error_and_leads_once_it_clears(
    failure: Exception,
) -> None:
    client = Client(LeaseServer())
    client.failure = failure
    standby = elector(client, "a")
    task = asyncio.create_task(standby.run())
    await asyncio.sleep(TIMING.retry_period * 4)
    assert not task.done() and not standby.leading.is_set()
    client.failure = None
    await standby.leading.wait()
    task.cancel()


@on_virtual_time
async def test_a_stopped_leader_gives_the_lease_up_and_a_standby_takes_it_at_once() -> None:
    server = LeaseServer()
    standby_client = Client(server)
    leader, standby = elector(Client(server), "a"), elector(standby_client, "b")
    leader_task = asyncio.create_task(leader.run())
    await leader.leading.wait()
    standby_task = asyncio.create_task(standby.run())
    await asyncio.sleep(TIMING.retry_period * 3)
    leader_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await leader_task
    assert not leader.still_leading()
    assert server.lease is not None
    assert server.lease["spec"]["holderIdentity"] == ""
    assert server.lease["spec"]["leaseDurationSeconds"] == 1
    attempts_before = standby_client.reads
    await standby.leading.wait()
    assert standby_client.reads == attempts_before + 1
    assert server.writes == ["a", *["a"] * (len(server.writes) - 3), "", "b"]
    standby_task.cancel()


@on_virtual_time
async def test_a_replica_stopped_before_it_leads_writes_nothing() -> None:
    server = LeaseServer()
    leader, standby = elector(Client(server), "a"), elector(Client(server), "b")
    leader_task = asyncio.create_task(leader.run())
    await leader.leading.wait()
    standby_task = asyncio.create_task(standby.run())
    await asyncio.sleep(TIMING.retry_period * 3)
    standby_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await standby_task
    assert set(server.writes) == {"a"}
    leader_task.cancel()


@on_virtual_time
async def test_a_stopped_leader_leaves_a_lease_another_replica_holds_alone() -> None:
    server = LeaseServer()
    leader = elector(Client(server), "a")
    task = asyncio.create_task(leader.run())
    await leader.leading.wait()
    assert server.lease is not None
    server.handle("PUT", {**server.lease, "spec": {**server.lease["spec"], "holderIdentity": "b"}})
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert server.writes[-1] == "b"
    assert not leader.still_leading()


def test_timings_are_checked_as_client_go_checks_them() -> None:
    LeaseTiming()  # the defaults: 15 s, 10 s, 2 s
    with pytest.raises(ValueError, match="longer than the renew deadline"):
        LeaseTiming(lease_duration=10, renew_deadline=10, retry_period=2)
    with pytest.raises(ValueError, match="retry period"):
        LeaseTiming(lease_duration=15, renew_deadline=2, retry_period=2)


@on_virtual_time
async def test_the_time_left_runs_from_the_start_of_the_last_good_renewal() -> None:
    """What a fenced write may still take: the renew deadline after the start of the
    renewal that last succeeded, never the Lease's full duration."""
    server = LeaseServer()
    client = Client(server)
    leader = elector(client, "a")
    task = asyncio.create_task(leader.run())
    await leader.leading.wait()
    assert leader.lease_left() == pytest.approx(TIMING.renew_deadline, abs=0.01)
    await asyncio.sleep(TIMING.retry_period / 2)  # between two renewals
    assert leader.lease_left() == pytest.approx(
        TIMING.renew_deadline - TIMING.retry_period / 2, abs=0.01
    )
    await asyncio.sleep(TIMING.retry_period)  # renewed once since
    assert leader.lease_left() == pytest.approx(
        TIMING.renew_deadline - TIMING.retry_period / 2, abs=0.01
    )
    client.failure = KubeError(500, "InternalError", "etcd leader changed")
    await asyncio.sleep(TIMING.renew_deadline - TIMING.retry_period)
    assert 0 < leader.lease_left() < TIMING.retry_period  # counting down, unrenewed
    await task  # past the deadline: it stepped down
    assert leader.lease_left() == 0 and not leader.still_leading()


@on_virtual_time
async def test_a_standby_has_no_time_left_and_a_leader_without_a_lease_has_no_end() -> None:
    standby = elector(Client(LeaseServer()), "b")
    assert standby.lease_left() == 0
    standby.lead_unconditionally()
    assert standby.lease_left() == math.inf and standby.still_leading()


@on_virtual_time
async def test_a_suspended_leader_wakes_with_no_time_left() -> None:
    """Suspension moves the lease clock (CLOCK_BOOTTIME) but not the event loop's
    (CLOCK_MONOTONIC): the leader wakes past its deadline, with nothing left to write
    in, though no timer of its loop has fired yet."""
    loop = asyncio.get_running_loop()
    suspended = [0.0]
    leader = LeaderElector(
        Client(LeaseServer()),  # type: ignore[arg-type]
        name="muster-operator",
        namespace="default",
        identity="a",
        timing=TIMING,
        clock=lambda: loop.time() + suspended[0],
    )
    task = asyncio.create_task(leader.run())
    await leader.leading.wait()
    assert leader.lease_left() > 0
    suspended[0] = TIMING.lease_duration
    assert leader.lease_left() == 0 and not leader.still_leading()
    await task  # and it steps down at its next renewal


def test_the_lease_clock_counts_suspension_where_linux_can() -> None:
    """CLOCK_BOOTTIME is CLOCK_MONOTONIC plus the time suspended, so it is never behind
    it; elsewhere the fallback is the monotonic clock."""
    boot = time.clock_gettime(time.CLOCK_BOOTTIME)
    assert boot <= lease_clock() <= time.clock_gettime(time.CLOCK_BOOTTIME)
    assert time.monotonic() <= lease_clock()
    assert clock_counting_suspension(None) is time.monotonic
    realtime = clock_counting_suspension(time.CLOCK_REALTIME)
    assert abs(realtime() - time.time()) < 1
