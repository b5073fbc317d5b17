"""Kubernetes resource quantities, parsed exactly as the API server reads them.

Requests are compared against allocatable capacity, so a rounding difference of one
millicore or one byte would make the engine disagree with kube-scheduler. Parsing
goes through `Fraction` (no floating point) and rounds up the way `Quantity.MilliValue`
and `Quantity.Value` do.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_BINARY_SUFFIXES = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_DECIMAL_SUFFIXES = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_NUMBER = re.compile(r"([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)")
_EXPONENT = re.compile(r"[eE]([+-]?\d+)")

MILLI_RESOURCES = frozenset({"cpu"})
MAX_AMOUNT = 2**53
"""Larger amounts are refused: capacity is summed in 64-bit integers (and in float64
when counting freed capacity), and no real node offers anything near this."""
"""Resources that kube-scheduler counts in thousandths (everything else in units)."""


class QuantityError(ValueError):
    """A quantity the API server would reject."""


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Fraction:
    match = _NUMBER.fullmatch(text.strip())
    if match is None:
        raise QuantityError(f"invalid quantity {text!r}")
    sign, number, suffix = match.groups()
    value = Fraction(number)
    if suffix in _BINARY_SUFFIXES:
        value *= _BINARY_SUFFIXES[suffix]
    elif suffix in _DECIMAL_SUFFIXES:
        value *= _DECIMAL_SUFFIXES[suffix]
    else:
        exponent = _EXPONENT.fullmatch(suffix)
        if exponent is None:
            raise QuantityError(f"invalid quantity suffix in {text!r}")
        value *= Fraction(10) ** int(exponent.group(1))
    return -value if sign == "-" else value


def parse_quantity(raw: object) -> Fraction:
    """The exact value of a quantity given as text or as a YAML/JSON number."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise QuantityError(f"invalid quantity {raw!r}")
    if isinstance(raw, float) and not math.isfinite(raw):
        raise QuantityError(f"invalid quantity {raw!r}")
    return _parse_text(raw if isinstance(raw, str) else repr(raw))


def to_amount(resource: str, raw: object) -> int:
    """A request or capacity as the integer kube-scheduler compares (rounded up).

    cpu is counted in millicores, every other resource in its base unit (bytes for
    memory and storage, devices for extended resources).
    """
    if type(raw) is str:
        return _text_amount(resource in MILLI_RESOURCES, raw)
    return _amount(resource in MILLI_RESOURCES, parse_quantity(raw), raw)


@lru_cache(maxsize=8192)
def _text_amount(milli: bool, text: str) -> int:
    """Pods repeat the same few quantities: each text is converted once."""
    return _amount(milli, _parse_text(text), text)


def _amount(milli: bool, value: Fraction, raw: object) -> int:
    if value < 0:
        raise QuantityError(f"negative quantity {raw!r}")
    amount = math.ceil(value * 1000) if milli else math.ceil(value)
    if amount > MAX_AMOUNT:
        raise QuantityError(f"quantity {raw!r} is too large")
    return amount
