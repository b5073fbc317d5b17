"""The webhooks' serving certificate in a cluster: a CA and a certificate it signed.

The API server calls webhooks over HTTPS and trusts them through the `caBundle` of
the webhook configurations, so every replica must serve a certificate that bundle
vouches for, under the names the API server dials (`<service>.<namespace>.svc`).
This module is the pure part: issue a pair, read it from and write it to a Secret's
data (the `kubernetes.io/tls` layout cert-manager uses too: `tls.crt`, `tls.key`,
`ca.crt`), and say when it is due for renewal. `muster.operator.webhook_feeds.certificate_keeper`
does the I/O. Outside a cluster (a laptop, the e2e tests) the webhook server serves
a pair issued here too, written as one `chain` file.

A renewal issues a new CA as well, and its bundle keeps the previous CA beside the
new one: replicas pick the new certificate up one by one, and the API server must
trust the old and the new certificate alike until they have.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=30)
# Tolerates API servers whose clock runs a little behind ours.
BACKDATE = datetime.timedelta(minutes=5)

TLS_CERT = "tls.crt"
TLS_KEY = "tls.key"
CA_CERT = "ca.crt"
_FILES = (TLS_CERT, TLS_KEY, CA_CERT)  # a Secret's, in ServingCertificate's field order


@dataclass(frozen=True, slots=True)
class ServingCertificate:
    """PEM texts: the served certificate, its key, and the CAs clients should trust."""

    certificate: bytes
    key: bytes
    ca_bundle: bytes

    @property
    def chain(self) -> bytes:
        """The certificate followed by the CAs: a file to serve that, read as a bundle
        (as the webhook server reads its certificate file for the configurations'
        `caBundle`), also vouches for itself."""
        return self.certificate + self.ca_bundle

    @property
    def not_after(self) -> datetime.datetime:
        return x509.load_pem_x509_certificate(self.certificate).not_valid_after_utc

    def hosts(self) -> set[str]:
        """The DNS names and IP addresses the certificate is valid for."""
        certificate = x509.load_pem_x509_certificate(self.certificate)
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        addresses = {str(address) for address in names.get_values_for_type(x509.IPAddress)}
        return set(names.get_values_for_type(x509.DNSName)) | addresses

    def needs_renewal(
        self,
        *,
        hosts: Sequence[str],
        now: datetime.datetime,
        renew_before: datetime.timedelta = RENEW_BEFORE,
    ) -> bool:
        """Close to expiry, or not valid for every host the webhooks are reached at."""
        return now + renew_before >= self.not_after or not set(hosts) <= self.hosts()


def service_hosts(service: str, namespace: str) -> list[str]:
    """The names a Service is dialled by; the API server uses `<service>.<namespace>.svc`."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def _alternative_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def _still_trusted_cas(bundle: bytes, now: datetime.datetime) -> list[x509.Certificate]:
    return [
        certificate
        for certificate in x509.load_pem_x509_certificates(bundle)
        if certificate.not_valid_after_utc > now
    ]


def issue(
    hosts: Sequence[str],
    *,
    now: datetime.datetime,
    previous: ServingCertificate | None = None,
    validity: datetime.timedelta = VALIDITY,
) -> ServingCertificate:
    """A new CA and a certificate it signs for `hosts`.

    The bundle is the new CA, then the CA that issued `previous` (when still valid),
    so certificates of both generations are trusted through a rotation. Only one
    older generation is kept: the one before it expired by the time of this renewal.
    """
    if not hosts:
        raise ValueError("a serving certificate needs at least one host")
    start, end = now - BACKDATE, now + validity
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _authority(ca_key, start, end)
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(_CA_NAME)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            # Every generation's CA has the same name: the key identifier tells them apart.
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .add_extension(
            x509.SubjectAlternativeName([_alternative_name(host) for host in hosts]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    trusted = [ca]
    if previous is not None:
        trusted += _still_trusted_cas(previous.ca_bundle, now)[:1]
    return ServingCertificate(
        certificate=_pem(certificate),
        key=_key_pem(key),
        ca_bundle=b"".join(_pem(item) for item in trusted),
    )


_CA_NAME = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "muster-webhooks-ca")])


def _authority(
    key: ec.EllipticCurvePrivateKey, start: datetime.datetime, end: datetime.datetime
) -> x509.Certificate:
    """A self-signed CA that may sign serving certificates and nothing below them."""
    return (
        x509.CertificateBuilder()
        .subject_name(_CA_NAME)
        .issuer_name(_CA_NAME)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )


def secret_data(certificate: ServingCertificate) -> dict[str, str]:
    """The Secret's `data` (base64, as the API wants it)."""
    texts = zip(_FILES, astuple(certificate), strict=True)
    return {name: base64.b64encode(text).decode("ascii") for name, text in texts}


def from_secret(secret: Mapping[str, Any]) -> ServingCertificate | None:
    """The certificate a Secret holds; None when it holds none that can be read."""
    data = secret.get("data") or {}
    try:
        certificate = ServingCertificate(*(base64.b64decode(data[name]) for name in _FILES))
        certificate.hosts()
        x509.load_pem_x509_certificates(certificate.ca_bundle)
        serialization.load_pem_private_key(certificate.key, password=None)
    except (KeyError, ValueError, TypeError, x509.ExtensionNotFound):
        return None
    return certificate
