"""CEL selectors judged on a device's kind: attributes, capacity as quantities, errors."""

from __future__ import annotations

import pytest

from muster.scheduler.rules.device_selectors import (
    DeviceKind,
    SelectorError,
    compiled,
    read_names,
    selects,
)

H100 = DeviceKind(
    "gpu.example.com",
    (("gpu.example.com/index", 3), ("numa.example.com/node", 1), ("product", "H100")),
    (("memory", 80 * 2**30),),
)


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
    assert selects((expression,), H100) is selected


def test_every_expression_must_select_the_device() -> None:
    driver = 'device.driver == "gpu.example.com"'
    assert selects((driver, 'device.attributes["gpu.example.com"].product == "H100"'), H100)
    assert not selects((driver, 'device.attributes["gpu.example.com"].product == "B200"'), H100)
    assert selects((), H100)


def test_an_attribute_the_device_lacks_or_a_result_not_true_selects_nothing() -> None:
    assert not selects(('device.attributes["other.example.com"].product == "H100"',), H100)
    assert not selects(('"yes"',), H100)
    assert selects(('has(device.attributes["gpu.example.com"].product)',), H100)


def test_an_expression_that_does_not_compile_says_so_on_one_line() -> None:
    with pytest.raises(SelectorError, match="does not compile") as raised:
        compiled("device.driver ==")
    assert "\n" not in str(raised.value)


def test_a_kind_is_narrowed_to_the_names_the_expressions_spell() -> None:
    product = ('device.attributes["gpu.example.com"].product == "H100"',)
    assert read_names(product) is not None
    assert "product" in (read_names(product) or ())
    with_uuid = DeviceKind(H100.driver, (*H100.attributes, ("uuid", "GPU-1")), H100.capacity)
    assert selects(product, with_uuid)
    assert not selects(('device.attributes["gpu.example.com"].uuid == "GPU-2"',), with_uuid)


def test_an_expression_that_iterates_a_map_sees_every_name() -> None:
    counted = ('size(device.attributes["gpu.example.com"]) == 2',)
    assert read_names(counted) is None
    assert selects(counted, H100)  # index and product; numa is another domain
    with_uuid = DeviceKind(H100.driver, (*H100.attributes, ("uuid", "GPU-1")), H100.capacity)
    assert not selects(counted, with_uuid)
