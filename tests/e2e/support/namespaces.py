"""A namespace of its own for each e2e test, named for the test that made it."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

from devtools.kubectl import Kubectl
from devtools.waiting import wait_until


def namespace_for(test_name: str) -> str:
    """A DNS-label namespace name that says which test made it."""
    stem = re.sub(r"[^a-z0-9-]+", "-", test_name.lower()).strip("-")[:40].rstrip("-")
    return f"{stem}-{uuid.uuid4().hex[:5]}"


def fresh_namespace(kubectl: Kubectl, test_name: str) -> Iterator[str]:
    name = namespace_for(test_name)
    kubectl("create", "namespace", name)
    wait_until(
        f"the default ServiceAccount in {name}",
        lambda: (
            kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode == 0
        ),
    )
    yield name
    kubectl("delete", "namespace", name, "--wait=false", check=False)
