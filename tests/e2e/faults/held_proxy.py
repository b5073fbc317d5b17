"""A TCP proxy in front of kube-apiserver that holds new connections while it is held and
lets them all through the moment it is released.

A process started while the API server is away retries with a backoff, so when its
first request lands after the server is back is left to chance. Through this proxy,
its requests wait on accepted connections instead, and reach the server together at
the moment the test releases them: the moment the server answers again. TLS passes
through untouched (the proxy only copies bytes), so the server's certificate, made
for 127.0.0.1, still matches.

The soak uses it for two faults of the operator's connection: `cut()` closes every
connection open through it (as a network partition ends them), and `latency` delays
each chunk it copies (a slow link).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

CHUNK = 64 * 1024


class HeldProxy:
    """Listens on 127.0.0.1 and forwards every connection to `upstream` once released."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.released = threading.Event()
        self.released.set()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.held = 0  # connections that waited for a release
        self.latency = 0.0  # seconds each copied chunk waits
        self.delayed = 0  # chunks that waited for `latency`
        self.cuts = 0  # connections closed by `cut()`
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="held-proxy", daemon=True).start()

    @classmethod
    def in_front_of(cls, kubeconfig: Path) -> HeldProxy:
        address = urlsplit(_server(kubeconfig))
        assert address.hostname is not None and address.port is not None
        return cls((address.hostname, address.port))

    def kubeconfig(self, kubeconfig: Path, path: Path) -> Path:
        """A copy of `kubeconfig` whose server is this proxy."""
        config = json.loads(kubeconfig.read_text())
        for cluster in config["clusters"]:
            cluster["cluster"]["server"] = f"https://127.0.0.1:{self.port}"
        path.write_text(json.dumps(config))
        return path

    def hold(self) -> None:
        self.released.clear()

    def release(self) -> None:
        self.released.set()

    def cut(self) -> None:
        """Close every connection open through the proxy, both ways."""
        with self._lock:
            connections, self._open = list(self._open), set()
        for end in connections:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
        self.cuts += len(connections) // 2

    def close(self) -> None:
        self.released.set()
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._forward, args=(client,), daemon=True).start()

    def _forward(self, client: socket.socket) -> None:
        if not self.released.is_set():
            self.held += 1
            self.released.wait()
        try:
            server = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            client.close()
            return
        server.settimeout(None)
        with self._lock:
            self._open.update((client, server))
        threading.Thread(target=self._copy, args=(server, client), daemon=True).start()
        self._copy(client, server)

    def _copy(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(CHUNK):
                if self.latency:
                    self.delayed += 1
                    time.sleep(self.latency)
                target.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.difference_update((source, target))
            for end in (source, target):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()


def _server(kubeconfig: Path) -> str:
    return str(json.loads(kubeconfig.read_text())["clusters"][0]["cluster"]["server"])
