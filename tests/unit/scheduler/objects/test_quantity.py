"""Quantities are parsed exactly and rounded up as kube-scheduler rounds them."""

from __future__ import annotations

from fractions import Fraction

import pytest

from muster.scheduler.objects.quantity import QuantityError, parse_quantity, to_amount


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("1Gi", Fraction(2**30)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("2", Fraction(2)),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("1.5Ki", Fraction(1536)),
        ("2k", Fraction(2000)),
        ("3M", Fraction(3_000_000)),
        ("1E", Fraction(10**18)),
        ("100n", Fraction(1, 10**7)),
        ("5u", Fraction(5, 10**6)),
        ("1e-3", Fraction(1, 1000)),
        ("+4", Fraction(4)),
        (2, Fraction(2)),
        (0.5, Fraction(1, 2)),
        (1e3, Fraction(1000)),
    ],
)
def test_parses_like_the_api_server(raw: object, value: Fraction) -> None:
    assert parse_quantity(raw) == value


@pytest.mark.parametrize("raw", ["", "abc", "1Gb", "1 Gi", "--1", "1ee3", True, None, [1]])
def test_rejects_what_the_api_server_rejects(raw: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(raw)


def test_cpu_counts_millicores_rounded_up() -> None:
    assert to_amount("cpu", "500m") == 500
    assert to_amount("cpu", "2") == 2000
    assert to_amount("cpu", "0.0001") == 1


def test_other_resources_count_units_rounded_up() -> None:
    assert to_amount("memory", "1Gi") == 2**30
    assert to_amount("memory", "1500m") == 2
    assert to_amount("nvidia.com/gpu", "4") == 4


def test_negative_and_huge_amounts_are_invalid() -> None:
    with pytest.raises(QuantityError):
        to_amount("cpu", "-1")
    with pytest.raises(QuantityError):
        to_amount("memory", "10Ei")
