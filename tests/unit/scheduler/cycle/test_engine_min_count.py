"""minCount changed on a live gang, as native 1.37 gang scheduling treats it: the quorum
is the new minCount from the next cycle on, for a gang still waiting and for one
already admitted alike."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig
from muster.scheduler.decisions.results import Reason
from tests.unit.scheduler.fake_api import FakeApi, admitted

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12)


def released(api: FakeApi, key: GroupKey) -> int:
    return sum("nodeSelector" in obj["spec"] for obj in api.members(key))


def test_lowering_min_count_starts_a_waiting_gang_as_soon_as_the_new_quorum_fits() -> None:
    api = FakeApi(now=NOW, config=CONFIG)
    api.add_node(cpu=2)
    key = api.add_gang("g", size=4, min_count=4, cpu=1)
    assert api.cycle().verdicts[key].reason is Reason.UNSCHEDULABLE
    api.set_min_count(key, 3)
    assert api.cycle().verdicts[key].reason is Reason.UNSCHEDULABLE, "3 do not fit either"
    api.set_min_count(key, 2)
    (admission,) = api.cycle().admissions
    assert len(admission.placements) == 2
    assert admitted(api.groups[key]["status"]) and released(api, key) == 2
    assert api.groups[key]["status"]["minCount"] == 2


def test_raising_min_count_holds_unbound_members_until_bound_and_placeable_reach_it() -> None:
    api = FakeApi(now=NOW, config=CONFIG)
    api.add_node(cpu=2)
    key = api.add_gang("g", size=2, min_count=2, cpu=1)
    api.cycle()
    for pod_key in api.unbound_released():
        api.bind(pod_key)
    api.cycle()
    api.add_member("g", 1)
    api.add_member("g", 1)
    api.set_min_count(key, 4)
    spare = api.add_node(cpu=1)  # room for one more member only: 2 bound + 1 < 4
    result = api.cycle()
    assert released(api, key) == 2, "no member released while the new quorum cannot be met"
    assert not result.growths
    assert admitted(api.groups[key]["status"]), "what runs keeps running"
    api.add_node(cpu=1)  # now 2 bound + 2 placeable = 4
    result = api.cycle()
    (growth,) = result.growths
    assert len(growth.placements) == 2 and spare in growth.placements.values()
    assert released(api, key) == 4


def test_raising_min_count_between_an_admission_written_and_its_release_holds_it() -> None:
    """The operator stopped after writing the plan: a restart must not release fewer
    pods than the new minCount."""
    api = FakeApi(now=NOW, config=CONFIG)
    api.add_node(cpu=1)
    api.add_node(cpu=1)
    key = api.add_gang("g", size=2, min_count=2, cpu=1)
    api.cycle(crash_after=1)  # the admission's status write, then the crash
    assert admitted(api.groups[key]["status"]) and released(api, key) == 0
    api.set_min_count(key, 3)
    api.cycle()
    assert released(api, key) == 0
    api.add_member("g", 1)
    api.add_node(cpu=1)
    api.cycle()
    assert released(api, key) == 3
