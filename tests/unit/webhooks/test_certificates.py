"""The webhooks' serving certificate: what the API server would accept, and when it renews."""

from __future__ import annotations

import datetime
import ssl
import tempfile
from pathlib import Path

import pytest

from muster.webhooks.certificates import (
    ServingCertificate,
    from_secret,
    issue,
    secret_data,
    service_hosts,
)

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
HOSTS = service_hosts("muster-webhooks", "muster-system")


def handshake(served: ServingCertificate, trusted: bytes, server_name: str) -> None:
    """A TLS handshake in memory, the client checking the server as an API server does."""
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as directory:
        cert, key = Path(directory, "tls.crt"), Path(directory, "tls.key")
        cert.write_bytes(served.certificate)
        key.write_bytes(served.key)
        server_context.load_cert_chain(cert, key)
    client_context = ssl.create_default_context(cadata=trusted.decode())
    client_in, client_out, server_in, server_out = (ssl.MemoryBIO() for _ in range(4))
    client = client_context.wrap_bio(client_in, client_out, server_hostname=server_name)
    server = server_context.wrap_bio(server_in, server_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(10):
        for name, side in (("client", client), ("server", server)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        server_in.write(client_out.read())
        client_in.write(server_out.read())
        if all(done.values()):
            return
    raise AssertionError("the handshake did not finish")


def test_the_api_server_accepts_the_certificate_under_the_service_name() -> None:
    served = issue(HOSTS, now=datetime.datetime.now(datetime.UTC))
    handshake(served, served.ca_bundle, "muster-webhooks.muster-system.svc")


def test_a_name_the_certificate_was_not_issued_for_is_refused() -> None:
    served = issue(HOSTS, now=datetime.datetime.now(datetime.UTC))
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(served, served.ca_bundle, "elsewhere.muster-system.svc")


def test_an_ip_address_host_is_an_ip_address_name() -> None:
    served = issue([*HOSTS, "127.0.0.1"], now=datetime.datetime.now(datetime.UTC))
    assert "127.0.0.1" in served.hosts()
    handshake(served, served.ca_bundle, "127.0.0.1")


def test_after_a_renewal_both_generations_are_trusted_and_older_ones_are_not() -> None:
    now = datetime.datetime.now(datetime.UTC)
    first = issue(HOSTS, now=now)
    second = issue(HOSTS, now=now, previous=first)
    third = issue(HOSTS, now=now, previous=second)
    for served in (first, second):
        handshake(served, second.ca_bundle, "muster-webhooks.muster-system.svc")
    handshake(second, third.ca_bundle, "muster-webhooks.muster-system.svc")
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(first, third.ca_bundle, "muster-webhooks.muster-system.svc")


def test_an_expired_previous_ca_is_not_kept() -> None:
    old = issue(HOSTS, now=NOW, validity=datetime.timedelta(days=1))
    renewed = issue(HOSTS, now=NOW + datetime.timedelta(days=2), previous=old)
    assert renewed.ca_bundle.count(b"BEGIN CERTIFICATE") == 1


def test_renewal_is_due_within_thirty_days_of_expiry_or_when_the_hosts_change() -> None:
    served = issue(HOSTS, now=NOW)
    assert not served.needs_renewal(hosts=HOSTS, now=NOW)
    assert not served.needs_renewal(hosts=HOSTS, now=NOW + datetime.timedelta(days=334))
    assert served.needs_renewal(hosts=HOSTS, now=NOW + datetime.timedelta(days=336))
    assert served.needs_renewal(hosts=[*HOSTS, "127.0.0.1"], now=NOW)
    assert not served.needs_renewal(hosts=HOSTS[2:3], now=NOW)


def test_a_secret_gives_back_what_was_stored_and_nothing_from_garbage() -> None:
    served = issue(HOSTS, now=NOW)
    assert from_secret({"data": secret_data(served)}) == served
    assert from_secret({}) is None
    assert from_secret({"data": {**secret_data(served), "tls.crt": "bm90IGEgY2VydA=="}}) is None
    assert from_secret({"data": {**secret_data(served), "tls.key": "!"}}) is None


def test_a_certificate_needs_a_host() -> None:
    with pytest.raises(ValueError, match="at least one host"):
        issue([], now=NOW)
