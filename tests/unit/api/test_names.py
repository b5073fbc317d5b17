"""Kubernetes name syntaxes, as apimachinery checks them."""

from __future__ import annotations

import pytest

from muster.api.names import is_dns_label, is_dns_subdomain, is_label_key


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("zone", True),
        ("topology.kubernetes.io/zone", True),
        ("example.com/Rack_1.a", True),
        ("", False),
        ("/zone", False),
        ("a/b/c", False),
        ("Example.com/zone", False),
        ("zone-", False),
        ("x" * 63, True),
        ("x" * 64, False),
        ("example.com/", False),
    ],
)
def test_label_keys(key: str, valid: bool) -> None:
    assert is_label_key(key) is valid


def test_dns_names() -> None:
    assert is_dns_label("workers-1")
    assert not is_dns_label("Workers")
    assert not is_dns_label("a.b")
    assert not is_dns_label("a" * 64)
    assert is_dns_subdomain("a.b-c.d")
    assert not is_dns_subdomain("a..b")
