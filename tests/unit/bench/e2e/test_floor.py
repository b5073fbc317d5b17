from __future__ import annotations

from bench.e2e.floor import FLOOR_GATE, gated, ungate_patch


def test_only_pods_carrying_the_floor_gate_are_released() -> None:
    assert gated({"spec": {"schedulingGates": [{"name": FLOOR_GATE}]}})
    assert not gated({"spec": {"schedulingGates": [{"name": "other.example/gate"}]}})
    assert not gated({"spec": {}})


def test_the_release_removes_the_floor_gate_and_nothing_else() -> None:
    gates = ungate_patch()["spec"]["schedulingGates"]
    assert gates == [{"$patch": "delete", "name": FLOOR_GATE}]
