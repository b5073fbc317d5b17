"""Health checks of the components, over the protocol each serves."""

from __future__ import annotations

import ssl
import urllib.request
from pathlib import Path


def https_ok(url: str, pki: Path) -> bool:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    with urllib.request.urlopen(url, context=context, timeout=3) as response:
        return bool(response.status == 200)


def insecure_ok(url: str) -> bool:
    """Controller-manager and scheduler serve /healthz with self-signed certs."""
    context = ssl._create_unverified_context()
    with urllib.request.urlopen(url, context=context, timeout=3) as response:
        return bool(response.status == 200)


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=3) as response:
        return bool(response.status == 200)
