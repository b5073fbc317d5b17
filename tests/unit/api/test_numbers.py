"""Counts read from annotations, which tenants write."""

from __future__ import annotations

import pytest

from muster.api.numbers import MAX_DIGITS, positive_integer


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("8", 8),
        ("1", 1),
        ("0", None),
        ("-2", None),
        ("x", None),
        ("", None),
        ("٣", None),  # a digit, but not ASCII
        (8, None),
        ("9" * MAX_DIGITS, int("9" * MAX_DIGITS)),
    ],
)
def test_a_count_is_a_positive_integer_in_plain_digits(value: object, expected: int | None) -> None:
    assert positive_integer(value) == expected


def test_a_string_of_more_digits_than_python_converts_is_no_count() -> None:
    """Past 4,300 digits `int()` raises; a tenant's annotation must not."""
    assert positive_integer("9" * 5000) is None
    assert positive_integer("9" * (MAX_DIGITS + 1)) is None
