"""`muster dashboard` answers only Host headers that name its own address."""

from __future__ import annotations

import pytest

from muster.operator.dashboard.hosts import allowed_host, host_name


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:8090", "127.0.0.1"),
        ("LocalHost:8090", "localhost"),
        ("[::1]:8090", "::1"),
        ("[::1]", "::1"),
        ("example.com.", "example.com"),
        ("example.com", "example.com"),
    ],
)
def test_the_host_name_has_no_port_brackets_or_final_dot(header: str, name: str) -> None:
    assert host_name(header) == name


@pytest.mark.parametrize(
    ("header", "address", "allowed"),
    [
        ("127.0.0.1:8090", "127.0.0.1", True),
        ("localhost:8090", "127.0.0.1", True),
        ("localhost.:8090", "127.0.0.1", True),
        ("[::1]:8090", "127.0.0.1", True),
        ("127.0.0.1:9999", "127.0.0.1", True),  # a forwarded port
        ("attacker.example:8090", "127.0.0.1", False),  # DNS rebinding
        ("localhost.attacker.example", "127.0.0.1", False),
        ("127.0.0.1.attacker.example", "127.0.0.1", False),
        ("", "127.0.0.1", False),
        (None, "127.0.0.1", False),
        ("10.0.0.5:8090", "0.0.0.0", True),  # bound everywhere: any address
        ("[fe80::1]:8090", "::", True),
        ("localhost", "0.0.0.0", True),
        ("attacker.example", "0.0.0.0", False),
        ("10.0.0.5:8090", "10.0.0.5", True),
        ("10.0.0.6:8090", "10.0.0.5", False),
        ("localhost:8090", "10.0.0.5", False),
    ],
)
def test_only_the_own_address_is_answered(header: str | None, address: str, allowed: bool) -> None:
    assert allowed_host(header, address) is allowed


def test_names_the_user_allows_are_answered_too() -> None:
    assert allowed_host("dashboard.team.example:8090", "0.0.0.0", ["Dashboard.team.example"])
    assert not allowed_host("other.example", "0.0.0.0", ["dashboard.team.example"])
