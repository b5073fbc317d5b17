"""The allocation on one node: the first combination of free devices that satisfies
every request, matchAttribute constraints included."""

from __future__ import annotations

import numpy as np

from muster.scheduler.devices.intake import Request
from muster.scheduler.devices.search import Typed, Wanted, attribute_of, choose
from muster.scheduler.devices.selectors import DeviceKind

DRIVER = "gpu.example.com"
# Six GPUs: NUMA node 0 holds 0-2, NUMA node 1 holds 3-5.
KINDS = [DeviceKind(DRIVER, (("numa", index // 3), ("index", index)), ()) for index in range(6)]
EVERY = np.ones(6, dtype=np.bool_)


def lookup(number: int, name: str) -> Typed | None:
    return attribute_of(KINDS[number], name)


def want(request: Request, binds: tuple[tuple[tuple[int, int], str], ...] = ()) -> Wanted:
    """The request, on every device its selection could select."""
    return Wanted(((request, EVERY),), binds)


def exactly(count: int, name: str = "gpu") -> Request:
    return Request(name, "gpu", (), all_devices=False, count=count)


def test_the_first_combination_of_free_devices_is_taken() -> None:
    assert choose([want(exactly(2))], [1, 2, 4], lookup) == [(1, 2)]
    assert choose([want(exactly(4))], [1, 2, 4], lookup) is None


def test_requests_of_a_constraint_share_the_attributes_value() -> None:
    numa = ((0, 0), f"{DRIVER}/numa")
    wanted = [want(exactly(2, "a"), (numa,)), want(exactly(1, "b"), (numa,))]
    assert choose(wanted, [0, 1, 3, 4, 5], lookup) == [(3, 4), (5,)]  # not 0 and 1 + one
    assert choose(wanted, [0, 1, 3, 4], lookup) is None


def test_an_attribute_of_another_domain_or_missing_satisfies_no_constraint() -> None:
    assert attribute_of(KINDS[4], f"{DRIVER}/numa") == (int, 1)
    assert attribute_of(KINDS[4], "other.example.com/numa") is None
    unbound = [want(exactly(1), (((0, 0), "other.example.com/numa"),))]
    assert choose(unbound, [0], lookup) is None


def test_all_devices_are_taken_only_if_they_agree() -> None:
    every = Request("all", "gpu", (), all_devices=True, count=1)
    numa = (((0, 0), f"{DRIVER}/numa"),)
    assert choose([want(every, numa)], [0, 1, 2], lookup) == [(0, 1, 2)]
    assert choose([want(every, numa)], [2, 3], lookup) is None


def test_a_subrequest_is_taken_only_when_those_before_cannot_be() -> None:
    numa0 = np.array([True, True, True, False, False, False])
    first_available = Wanted(((exactly(2), numa0), (exactly(1), EVERY)))
    assert choose([first_available], [0, 1, 4], lookup) == [(0, 1)]
    assert choose([first_available], [0, 4], lookup) == [(0,)]
    assert choose([first_available], [], lookup) is None
