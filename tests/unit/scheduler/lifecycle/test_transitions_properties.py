"""The gang lifecycle over random runs (hypothesis): the operator's cycles interleaved
with kube-scheduler binding or refusing, pods finishing and leaving, nodes added,
cordoned and removed, new gangs, minCount changes, the clock, and operator crashes
and restarts at any action of a plan (see `fake_api`).

After every step of a run:
- never a partial gang: a gang with no released member gets at least minCount
  released at once (released: ungated, not finished, not on its way out), except
  while it is being taken down;
- never an over-committed node: bound pods plus the reservations of admitted gangs'
  recorded plans fit its allocatable cpu (a victim a preemption awaits counts as gone);
- never an admission while the recorded backoff is in the future;
- a preemptor is released only once its victims are gone, and by then no victim gang
  is left with some members evicted and others running;
- every release and eviction only after its decision was written (`fake_api` raises).
"""

from __future__ import annotations

from collections import defaultdict

from hypothesis import example, given, settings
from hypothesis import strategies as st

from muster.api.constants import CONDITION_SCHEDULED, POD_GROUP_LABEL
from muster.api.gates import has_gang_gate
from muster.api.keys import GroupKey, PodKey
from muster.scheduler import EngineConfig
from muster.scheduler.memory.gang_memory import gang_memory_from
from muster.scheduler.objects.conditions import condition
from tests.unit.scheduler.builders import Obj
from tests.unit.scheduler.fake_api import FakeApi, admitted, cpu_of

NOW = 1_798_761_600.0
CONFIG = EngineConfig(
    starvation_seconds=120.0,
    max_rollbacks=2,
    release_timeout=60.0,
    victims_timeout=120.0,
    rollback_backoff=10.0,
    rollback_backoff_max=40.0,
)

EVENTS = st.one_of(
    st.tuples(st.just("cycle"), st.none() | st.integers(0, 6)),
    st.tuples(st.just("bind"), st.integers(0, 99), st.booleans(), st.integers(0, 9)),
    st.tuples(st.just("finish"), st.integers(0, 99)),
    st.tuples(st.just("leave"), st.none()),
    st.tuples(st.just("clock"), st.integers(1, 90)),
    st.tuples(st.just("restart"), st.none()),
    st.tuples(st.just("add-node"), st.integers(1, 4)),
    st.tuples(st.just("cordon"), st.integers(0, 99)),
    st.tuples(st.just("remove-node"), st.integers(0, 99)),
    st.tuples(
        st.just("gang"), st.integers(1, 4), st.integers(1, 4), st.integers(1, 2), st.integers(0, 2)
    ),
    st.tuples(st.just("min-count"), st.integers(0, 99), st.integers(1, 4)),
)


def finished(obj: Obj) -> bool:
    return bool(obj.get("status", {}).get("phase") == "Succeeded")


def released(obj: Obj) -> bool:
    return (
        not has_gang_gate(obj["spec"].get("schedulingGates") or [])
        and not finished(obj)
        and "deletionTimestamp" not in obj["metadata"]
    )


def min_count(group: Obj) -> int:
    return int(group["spec"]["schedulingPolicy"]["gang"]["minCount"])


def taken_down(group: Obj) -> bool:
    scheduled = condition(group.get("status") or {}, CONDITION_SCHEDULED) or {}
    return scheduled.get("reason") in ("Preempted", "RolledBack")


class Checker:
    """The properties, checked against the API objects after every step."""

    def __init__(self, api: FakeApi) -> None:
        self.api = api
        self.had_none: dict[GroupKey, bool] = defaultdict(lambda: True)
        self.admissions_seen = 0
        self.releases_seen = 0

    def check(self) -> None:
        self._no_partial_gang()
        self._no_overcommit()
        self._no_admission_in_backoff()
        self._victims_gone_before_release()

    def _no_partial_gang(self) -> None:
        for key, group in self.api.groups.items():
            count = sum(released(obj) for obj in self.api.members(key))
            if self.had_none[key] and 0 < count < min_count(group) and not taken_down(group):
                raise AssertionError(f"{key}: {count} released of minCount {min_count(group)}")
            if count == 0 or count >= min_count(group):
                self.had_none[key] = count == 0

    def _no_overcommit(self) -> None:
        """A victim awaited by a recorded preemption has its place promised to the
        preemptor (whose pods are released only once it is gone): counted once."""
        awaited = {
            victim
            for group in self.api.groups.values()
            for victim in gang_memory_from(group.get("status") or {}).victims
        }
        used: dict[str, int] = defaultdict(int)
        for key, obj in self.api.pods.items():
            if finished(obj) or key in awaited:
                continue
            on = obj["spec"].get("nodeName") or self._reserved_on(obj)
            if on is not None:
                used[on] += cpu_of(obj)
        for name, amount in used.items():
            node = self.api.nodes.get(name)
            if node is not None:
                allocatable = int(node["status"]["allocatable"]["cpu"])
                assert amount <= allocatable, f"{name}: {amount} cpu used of {allocatable}"

    def _reserved_on(self, obj: Obj) -> str | None:
        group = self.api.groups.get(
            GroupKey(obj["metadata"]["namespace"], obj["metadata"]["labels"][POD_GROUP_LABEL])
        )
        if group is None or not admitted(group["status"]):
            return None
        plan: dict[str, str] = group["status"].get("plan") or {}
        return plan.get(obj["metadata"]["name"])

    def _no_admission_in_backoff(self) -> None:
        for key, before in self.api.admissions[self.admissions_seen :]:
            until = gang_memory_from(before).backoff_until
            assert until is None or until <= self.api.now, f"{key} admitted in backoff"
        self.admissions_seen = len(self.api.admissions)

    def _victims_gone_before_release(self) -> None:
        for key in self.api.released[self.releases_seen :]:
            victims, victim_groups = self.api.awaited.pop(key, ((), frozenset()))
            still = [v for v in victims if self._still_there(v)]
            assert not still, f"{key} released while its victims {still} are still there"
            for victim_group in victim_groups:
                group = self.api.groups.get(victim_group)
                if group is None or admitted(group["status"]):
                    continue
                running = [o for o in self.api.members(victim_group) if o["spec"].get("nodeName")]
                live = [o for o in running if released(o)]
                assert not live, f"{victim_group} partly evicted while {key} runs"
        self.releases_seen = len(self.api.released)

    def _still_there(self, victim: PodKey) -> bool:
        """Bound and not finished: a victim that finished before its eviction frees its
        place as an evicted one does (kube-scheduler counts no finished pod on a node)."""
        obj = self.api.pods.get(victim)
        return obj is not None and bool(obj["spec"].get("nodeName")) and not finished(obj)


def pick(items: list[str] | list[PodKey] | list[GroupKey], index: int) -> object | None:
    return items[index % len(items)] if items else None


def play(api: FakeApi, event: tuple[object, ...], gangs: list[GroupKey]) -> None:
    kind, *args = event
    if kind == "cycle":
        crash = args[0]
        api.cycle(crash_after=crash if isinstance(crash, int) else None)
    elif kind == "bind":
        index, refuse, odds = args
        target = pick(api.unbound_released(), int(str(index)))
        if isinstance(target, PodKey):
            api.bind(target, refuse=bool(refuse) and int(str(odds)) == 0)
    elif kind == "finish":
        running = sorted(
            key for key, obj in api.pods.items() if obj["spec"].get("nodeName") and released(obj)
        )
        target = pick(running, int(str(args[0])))
        if isinstance(target, PodKey):
            api.finish(target)
    elif kind == "leave":
        api.finish_leaving()
    elif kind == "clock":
        api.now += int(str(args[0]))
    elif kind == "restart":
        api.restart()
    elif kind == "add-node":
        api.add_node(cpu=int(str(args[0])))
    elif kind in ("cordon", "remove-node"):
        name = pick(sorted(api.nodes), int(str(args[0])))
        if isinstance(name, str) and len(api.nodes) > 1:
            if kind == "cordon":
                node = dict(api.nodes[name])
                node["spec"] = {**node["spec"], "unschedulable": True}
                api.put_node(node)
            else:
                api.remove_node(name)
    elif kind == "gang" and len(gangs) < 5:
        size, wanted, cpu, priority = (int(str(arg)) for arg in args)
        gangs.append(
            api.add_gang(
                f"g{len(gangs)}",
                size=size,
                min_count=min(wanted, size),
                cpu=cpu,
                priority=priority * 100,
            )
        )
    elif kind == "min-count":
        key = pick(gangs, int(str(args[0])))
        if isinstance(key, GroupKey):
            api.set_min_count(key, int(str(args[1])))


@settings(max_examples=200, deadline=None)
@example(  # a victim finishes between its preemptor's admission and its eviction
    nodes=[1, 1],
    events=[
        ("cycle", None),
        ("bind", 0, False, 0),
        ("gang", 1, 1, 1, 1),
        ("cycle", 3),
        ("finish", 0),
    ],
)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.lists(EVENTS, max_size=60))
def test_the_lifecycle_keeps_its_promises_whatever_happens(
    nodes: list[int], events: list[tuple[object, ...]]
) -> None:
    api = FakeApi(now=NOW, config=CONFIG)
    for cpu in nodes:
        api.add_node(cpu=cpu)
    gangs = [api.add_gang("g0", size=2, min_count=2, cpu=1)]
    checker = Checker(api)
    for event in events:
        play(api, event, gangs)
        checker.check()
    # Let it settle: no more disturbances, kube-scheduler binds what fits.
    for _ in range(6):
        api.cycle()
        checker.check()
        for key in api.unbound_released():
            api.bind(key)
            checker.check()
        api.finish_leaving()
        api.now += 30
        checker.check()
