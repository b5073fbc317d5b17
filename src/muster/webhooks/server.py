"""Serving the admission webhooks: TLS certificate and kopf's webhook server settings.

The API server calls webhooks over HTTPS only. In a cluster the certificate comes
from a Secret (`--webhook-cert`, `--webhook-key`); elsewhere (a laptop, the e2e
tests) the operator makes a self-signed one for the address it advertises and puts
it, as the CA bundle, into the webhook configurations that kopf manages.

Importing this module registers every webhook handler of the package with kopf.
"""

from __future__ import annotations

import datetime
import ipaddress
import tempfile
from pathlib import Path

import kopf
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import muster.webhooks.gating  # noqa: F401  (registers the mutating webhooks)

CERTIFICATE_DAYS = 365


def self_signed_certificate(host: str) -> tuple[bytes, bytes]:
    """A certificate (its own CA) and key, valid for `host` as an IP or DNS name."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "muster-webhooks")])
    try:
        alternative: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        alternative = x509.DNSName(host)
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CERTIFICATE_DAYS))
        .add_extension(x509.SubjectAlternativeName([alternative]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def webhook_server(
    *, host: str, port: int, certfile: str | None, keyfile: str | None
) -> kopf.WebhookServer:
    """kopf's HTTPS webhook server, with the given certificate or a fresh self-signed one."""
    if certfile is None or keyfile is None:
        directory = Path(tempfile.mkdtemp(prefix="muster-webhooks-"))
        cert_pem, key_pem = self_signed_certificate(host)
        (directory / "tls.crt").write_bytes(cert_pem)
        (directory / "tls.key").write_bytes(key_pem)
        (directory / "tls.key").chmod(0o600)
        certfile, keyfile = str(directory / "tls.crt"), str(directory / "tls.key")
    return kopf.WebhookServer(
        addr=host,
        port=port,
        host=host,
        certfile=certfile,
        pkeyfile=keyfile,
        cadata=Path(certfile).read_bytes(),
    )


def configure(
    settings: kopf.OperatorSettings, *, server: kopf.WebhookServer, managed_name: str | None
) -> None:
    """Point kopf at the server; let it keep the webhook configurations when asked."""
    settings.admission.server = server
    if managed_name:
        settings.admission.managed = managed_name
