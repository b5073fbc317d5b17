"""Kubernetes name syntaxes, checked the way apimachinery checks them.

The API server validates these with CEL's `format` library; `muster validate`
and the webhooks need the same answers without a server.
"""

from __future__ import annotations

import re
from typing import Final

DNS_LABEL_MAX_LENGTH: Final = 63
DNS_SUBDOMAIN_MAX_LENGTH: Final = 253
LABEL_NAME_MAX_LENGTH: Final = 63
LABEL_KEY_MAX_LENGTH: Final = DNS_SUBDOMAIN_MAX_LENGTH + 1 + LABEL_NAME_MAX_LENGTH

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL_RE = re.compile(rf"^{_DNS_LABEL}$")
_DNS_SUBDOMAIN_RE = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
_LABEL_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def is_dns_label(value: str) -> bool:
    """RFC 1123 label: names of templates, namespaces, most objects' name parts."""
    return len(value) <= DNS_LABEL_MAX_LENGTH and _DNS_LABEL_RE.match(value) is not None


def is_dns_subdomain(value: str) -> bool:
    """RFC 1123 subdomain: object names such as a PriorityClass or a Workload."""
    return len(value) <= DNS_SUBDOMAIN_MAX_LENGTH and _DNS_SUBDOMAIN_RE.match(value) is not None


def is_label_key(value: str) -> bool:
    """A label key (what Kubernetes calls a qualified name): ``[prefix/]name``."""
    prefix, slash, name = value.rpartition("/")
    if slash and not is_dns_subdomain(prefix):
        return False
    return len(name) <= LABEL_NAME_MAX_LENGTH and _LABEL_NAME_RE.match(name) is not None
