"""A kubeconfig for a client that is never answered: what `connect` reads, no more."""

from __future__ import annotations

import json
from pathlib import Path


def token_kubeconfig(path: Path, server: str = "https://127.0.0.1:6443") -> Path:
    """A kubeconfig at `path` naming `server` and a bearer token."""
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path
