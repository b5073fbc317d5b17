"""The control plane's certificates and its admin kubeconfig, made with openssl."""

from __future__ import annotations

import json
from pathlib import Path

from devtools.cluster.layout import run


def openssl(pki: Path, *args: str) -> None:
    run("openssl", *args, cwd=str(pki))


def make_ca(pki: Path, subject: str, *extensions: str) -> None:
    """`ca.key` and a self-signed `ca.crt` in `pki`, with extra `-addext` extensions.

    Keys are written in PKCS #1 (`-traditional`), which every reader here accepts
    (Kueue parses its CA key only in that form)."""
    openssl(pki, "genrsa", "-traditional", "-out", "ca.key", "2048")
    added = [arg for extension in extensions for arg in ("-addext", extension)]
    openssl(
        pki,
        "req",
        "-x509",
        "-new",
        "-nodes",
        "-key",
        "ca.key",
        "-subj",
        subject,
        *added,
        "-days",
        "3650",
        "-out",
        "ca.crt",
    )


def issue_cert(pki: Path, name: str, subject: str, ext: str) -> None:
    """`NAME.key` and `NAME.crt` signed by the CA in `pki`, with the extensions in `ext`."""
    openssl(pki, "genrsa", "-traditional", "-out", f"{name}.key", "2048")
    openssl(pki, "req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr")
    openssl(
        pki,
        "x509",
        "-req",
        "-in",
        f"{name}.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "3650",
        "-extfile",
        ext,
        "-out",
        f"{name}.crt",
    )


def issue_serving_cert(pki: Path, subject: str, alt_names: str) -> None:
    """`tls.key` and `tls.crt` signed by the CA in `pki`, serving `alt_names` (a
    subjectAltName value: `DNS:name,IP:127.0.0.1`): what a webhook server presents."""
    (pki / "tls.ext").write_text(
        f"subjectAltName={alt_names}\n"
        "extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n"
    )
    issue_cert(pki, "tls", subject, "tls.ext")


def make_pki(pki: Path) -> None:
    """A CA, the API server's serving cert, an admin client cert and the SA key pair."""
    pki.mkdir(parents=True, exist_ok=True)
    make_ca(pki, "/CN=muster-local-ca")
    (pki / "server.ext").write_text(
        "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc\n"
        "extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n"
    )
    (pki / "client.ext").write_text(
        "extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n"
    )
    issue_cert(pki, "apiserver", "/CN=kube-apiserver", "server.ext")
    issue_cert(pki, "admin", "/O=system:masters/CN=muster-admin", "client.ext")
    openssl(pki, "genrsa", "-out", "sa.key", "2048")
    openssl(pki, "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")


def write_kubeconfig(path: Path, pki: Path, server: str) -> None:
    """JSON is valid YAML, so the kubeconfig needs no YAML library."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "muster",
                "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate": str(pki / "admin.crt"),
                    "client-key": str(pki / "admin.key"),
                },
            }
        ],
        "contexts": [{"name": "muster", "context": {"cluster": "muster", "user": "admin"}}],
        "current-context": "muster",
    }
    path.write_text(json.dumps(config, indent=2) + "\n")
