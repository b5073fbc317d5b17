"""A free TCP port on loopback, for every process a tool or test starts."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nobody listens on now; the caller binds it later, so another process may
    take it in between (`cluster.processes.PortTakenError` is how the control plane
    notices)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
