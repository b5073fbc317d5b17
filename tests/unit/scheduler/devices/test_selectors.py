"""CEL selectors judged on a device's kind: attributes, capacity as quantities, errors."""

from __future__ import annotations

import pytest

from muster.scheduler.devices.selector_cost import API_SERVER_COST_LIMIT, COST_LIMIT
from muster.scheduler.devices.selectors import (
    DeviceKind,
    Judgement,
    SelectorError,
    case_of,
    compiled,
    judge,
    read_names,
    selects,
)
from tests.unit.scheduler.device_builders import nested_all

H100 = DeviceKind(
    "gpu.example.com",
    (("gpu.example.com/index", 3), ("numa.example.com/node", 1), ("product", "H100")),
    (("memory", 80 * 2**30),),
)


def judged_selects(expressions: tuple[str, ...], kind: DeviceKind) -> bool:
    """`selects`, with each case judged first (as the operator's process would)."""
    judged = {case_of(e, kind): judge(case_of(e, kind)) for e in expressions}
    return selects(expressions, kind, judged)


@pytest.mark.parametrize(
    ("expression", "selected"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.attributes["gpu.example.com"].product == "H100"', True),
        ('device.attributes["gpu.example.com"].product == "A100"', False),
        ('device.attributes["gpu.example.com"].index == 3', True),
        ('device.attributes["numa.example.com"].node == 1', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
        ('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("90Gi"))', False),
        ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("0.1Ti"))', True),
    ],
)
def test_a_selector_reads_attributes_and_capacity_by_domain(
    expression: str, selected: bool
) -> None:
    assert judged_selects((expression,), H100) is selected


def test_every_expression_must_select_the_device() -> None:
    driver = 'device.driver == "gpu.example.com"'
    assert judged_selects((driver, 'device.attributes["gpu.example.com"].product == "H100"'), H100)
    assert not judged_selects(
        (driver, 'device.attributes["gpu.example.com"].product == "B200"'), H100
    )
    assert judged_selects((), H100)


def test_an_attribute_the_device_lacks_or_a_result_not_true_selects_nothing() -> None:
    assert not judged_selects(('device.attributes["other.example.com"].product == "H100"',), H100)
    assert not judged_selects(('"yes"',), H100)
    assert judged_selects(('has(device.attributes["gpu.example.com"].product)',), H100)


def test_an_expression_that_does_not_compile_says_so_on_one_line() -> None:
    with pytest.raises(SelectorError, match="does not compile") as raised:
        compiled("device.driver ==")
    assert "\n" not in str(raised.value)


def test_a_kind_is_narrowed_to_the_names_the_expressions_spell() -> None:
    product = ('device.attributes["gpu.example.com"].product == "H100"',)
    assert read_names(product) is not None
    assert "product" in (read_names(product) or ())
    with_uuid = DeviceKind(H100.driver, (*H100.attributes, ("uuid", "GPU-1")), H100.capacity)
    assert judged_selects(product, with_uuid)
    assert not judged_selects(('device.attributes["gpu.example.com"].uuid == "GPU-2"',), with_uuid)


def test_an_expression_that_iterates_a_map_sees_every_name() -> None:
    counted = ('size(device.attributes["gpu.example.com"]) == 2',)
    assert read_names(counted) is None
    assert judged_selects(counted, H100)  # index and product; numa is another domain
    with_uuid = DeviceKind(H100.driver, (*H100.attributes, ("uuid", "GPU-1")), H100.capacity)
    assert not judged_selects(counted, with_uuid)


def test_a_case_not_judged_selects_nothing() -> None:
    assert not selects(('device.driver == "gpu.example.com"',), H100, {})


def test_a_kind_is_one_case_with_every_kind_that_differs_only_in_names_not_read() -> None:
    product = 'device.attributes["gpu.example.com"].product == "H100"'
    with_uuid = DeviceKind(H100.driver, (*H100.attributes, ("uuid", "GPU-1")), H100.capacity)
    assert case_of(product, with_uuid) == case_of(product, H100)
    assert case_of("device.attributes.all(d, true)", with_uuid) != case_of(
        "device.attributes.all(d, true)", H100
    )


def test_the_cost_limit_stops_an_expression_that_would_run_for_minutes() -> None:
    """Four nested comprehensions over 30 numbers: 810,000 steps, which cel-python
    would take minutes over; the count stops it within the limit, whatever the speed."""
    body = 'device.attributes["gpu.example.com"].index + a + b + c + d >= 0'
    expression = nested_all(body, depth=4)
    assert judge(case_of(expression, H100)) is Judgement.OVER_COST


def test_a_selector_the_api_server_admits_can_exceed_musters_limit() -> None:
    """Three nested comprehensions over 30 numbers cost some 340,000 units: under
    kube-scheduler's limit (the API server admits it), over Muster's."""
    body = 'device.attributes["gpu.example.com"].index + a + b + c >= 0'
    expression = nested_all(body)
    assert COST_LIMIT < API_SERVER_COST_LIMIT
    assert judge(case_of(expression, H100)) is Judgement.OVER_COST


def test_a_selector_within_the_limit_is_judged_on_its_value() -> None:
    body = 'device.attributes["gpu.example.com"].index + a + b >= 0'
    expression = nested_all(body, depth=2)  # 900 steps of 11 units
    assert judge(case_of(expression, H100), limit=20_000) is Judgement.SELECTS
    assert judge(case_of(expression, H100), limit=1000) is Judgement.OVER_COST


def test_a_string_an_operation_yields_costs_a_tenth_of_its_length() -> None:
    grown = '"' + "x" * 2000 + '"'
    expression = f"size({grown} + {grown}) > 0"  # 400 units for the string it yields
    assert judge(case_of(expression, H100)) is Judgement.SELECTS
    assert judge(case_of(expression, H100), limit=300) is Judgement.OVER_COST
