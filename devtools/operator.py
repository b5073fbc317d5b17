"""The operator as a process: `muster run` launched locally or from the image.

The one launcher of hack/ (`make run`), bench/ and the e2e tests. A replica
(`OperatorProcess`) belongs to an installation (`WebhookService`): the cluster's admin
kubeconfig, the credentials a local replica authenticates with, the Deployment's
settings (`installed.install`), the flags every replica of it runs with, and, where the
webhook configurations call it, a stand-in for the Service on 127.0.0.1 that forwards
each connection to a ready replica, as the Service's endpoints would.

As installed (devtools/installed.py), the credentials are a token of the ServiceAccount
and the settings the Deployment's; a benchmark that installs only the CRDs runs a
replica with the admin kubeconfig and no settings. With `image`, a replica runs from
the image instead, with podman, as the Deployment runs its container
(devtools/container.py: a mounted token, no kubeconfig): `podman run` in the
foreground is then its process, so its output goes to the log and SIGTERM reaches
the operator (podman passes signals on).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from devtools import container, installed
from devtools.builds import ROOT
from devtools.ports import free_port
from devtools.waiting import wait_until
from muster.simulation.replay import ReplayedCycle, first_difference, read_trace, replay

# Where a replica from the image has its trace's directory mounted.
TRACE_MOUNT = "/var/run/muster-trace"
# How long a replica stays among the Service's endpoints after its readiness was last
# seen true: the chart's readinessProbe takes it out after 2 failures 5 s apart.
READINESS_GRACE = 10.0
# `muster run` from this interpreter, whatever its scripts directory holds.
MUSTER = (sys.executable, "-c", "import sys; from muster.cli import main; sys.exit(main())")


@dataclass
class OperatorProcess:
    """One `muster run` replica of `service`'s installation; its output goes to a log
    file kept for failures. `name` is its container's when run from the image (by
    default one made unique by its port)."""

    service: WebhookService
    log_path: Path
    identity: str = "muster-e2e"
    flags: tuple[str, ...] = ()
    record_trace: bool = False  # --record-trace to `trace_path`, for `replayed`
    health_port: int = field(default_factory=free_port)
    webhook_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    ready_at: float | None = None  # when its readiness was last seen true
    image: container.ImageRun | None = None
    name: str | None = None
    ready_timeout: float = 60.0

    def __post_init__(self) -> None:
        self.service.replicas.append(self)

    @property
    def kubeconfig(self) -> Path:
        return self.service.kubeconfig

    def replica(self, identity: str, *flags: str) -> OperatorProcess:
        """Another replica of the same installation (a standby), not yet started."""
        return OperatorProcess(
            service=self.service,
            log_path=self.log_path.with_name(f"{identity}.log"),
            identity=identity,
            flags=flags,
            image=self.image,
        )

    @property
    def trace_path(self) -> Path:
        """Where the operator records its trace (`--record-trace`), afresh at each start:
        a directory of its own, which a replica from the image has mounted writable."""
        return self.log_path.with_name(f"{self.log_path.stem}.trace") / "trace.jsonl"

    @property
    def container_name(self) -> str:
        """Its container's name when run from the image: podman's names are the
        machine's, and ports are unique on it while the replica lives."""
        return self.name or f"muster-{self.identity}-{self.health_port}"

    @property
    def credentials(self) -> Path:
        """A kubeconfig that authenticates as the replica does: the token it was given,
        mounted or in `service.credentials`."""
        if self.image is None:
            return self.service.credentials
        token = (self.image.service_account / "token").read_text()
        path = self.log_path.with_suffix(".token.kubeconfig")
        return installed.token_kubeconfig(self.kubeconfig, token, path)

    def replayed(self) -> list[ReplayedCycle]:
        """Every cycle of the running operator so far, decided again from its trace; the
        replay's decisions must be the operator's, cycle for cycle."""
        assert self.record_trace, "this operator records no trace"
        cycles = replay(read_trace(self.trace_path))
        difference = first_difference(cycles)
        assert difference is None, difference
        return cycles

    def command(self, extra: tuple[str, ...] = ()) -> list[str]:
        """The replica's command line: `muster run` with the installation's flags, its
        own and `extra`; from the image, `podman run` of it."""
        flags = (*self.service.flags, *self.flags, *extra)
        if self.image is not None:
            return self.image_command(flags)
        return [
            *MUSTER,
            "run",
            f"--kubeconfig={self.service.credentials}",
            "--webhook-host=127.0.0.1",
            f"--webhook-port={self.webhook_port}",
            "--health-host=127.0.0.1",
            f"--health-port={self.health_port}",
            f"--identity={self.identity}",
            *([f"--record-trace={self.trace_path}"] if self.record_trace else []),
            *flags,
        ]

    def image_command(self, flags: tuple[str, ...]) -> list[str]:
        """`podman run` of the image with the addresses and identity in the environment
        (as the Deployment sets them), the trace's directory mounted writable."""
        assert self.image is not None
        environment = container.local_environment(
            self.kubeconfig,
            self.service.settings,
            webhook_port=self.webhook_port,
            health_port=self.health_port,
            identity=self.identity,
        )
        volumes = {}
        if self.record_trace:
            # The container's user writes there, as to an emptyDir, and makes the file
            # afresh: one a local process left it may not open.
            self.trace_path.parent.chmod(0o1777)
            self.trace_path.unlink(missing_ok=True)
            volumes[self.trace_path.parent] = TRACE_MOUNT
            flags = (f"--record-trace={TRACE_MOUNT}/{self.trace_path.name}", *flags)
        return self.image.command(
            name=self.container_name, environment=environment, volumes=volumes, arguments=flags
        )

    def environment(self) -> dict[str, str]:
        """The process's environment: this one's, with the Deployment's settings."""
        return {**os.environ, **self.service.settings}

    def start(self, *extra: str) -> None:
        if self.record_trace:
            self.trace_path.parent.mkdir(exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"\n=== start {' '.join(extra)} ===\n".encode())
            self.process = subprocess.Popen(
                self.command(extra),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=ROOT,
                env=self.environment(),
            )
        wait_until("the operator to be ready", self.ready, timeout=self.ready_timeout)

    def ready(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(f"the operator exited:\n{self.log_tail()}")
        return self.serving()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("the operator is not running")
        return self.process.pid

    def exit_code(self) -> int | None:
        """None while the operator runs; its exit status (negative: a signal) once it ended."""
        return None if self.process is None else self.process.poll()

    def serving(self) -> bool:
        """Whether the replica is up and says it is ready (its readiness probe)."""
        if not self.running():
            return False
        ready = self.says_ready()
        if ready:
            self.ready_at = time.monotonic()
        return ready

    def says_ready(self) -> bool:
        """Whether its /readyz answers 200, however it was started."""
        try:
            with urllib.request.urlopen(self.url("/readyz"), timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def endpoint(self) -> bool:
        """Whether the Service would send a connection here: the process runs, and its
        readiness is true or was within READINESS_GRACE (a slow or briefly failing
        probe does not take an endpoint out at once; the replica itself answers a call
        it cannot serve yet with 503 and Retry-After)."""
        if self.serving():
            return True
        recent = self.ready_at is not None and time.monotonic() - self.ready_at < READINESS_GRACE
        return recent and self.running()

    def note(self, line: str) -> None:
        """A line in the replica's log, for what the harness did around it."""
        with self.log_path.open("ab") as log:
            log.write(f"=== {line} ===\n".encode())

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.health_port}{path}"

    def metrics(self) -> str:
        with urllib.request.urlopen(self.url("/metrics"), timeout=5) as response:
            text: str = response.read().decode()
            return text

    def kill(self) -> None:
        """SIGKILL: no cleanup of any kind, as when a node dies under the operator (from
        the image: its container's process killed, then podman)."""
        if self.image is not None:
            podman("kill", "--signal=KILL", self.container_name)
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
            self.process = None
            self.ready_at = None

    def stop(self) -> None:
        """SIGTERM, and SIGKILL after 15 s; a container from the image is removed too."""
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
            self.process = None
            self.ready_at = None
        if self.image is not None:
            podman("rm", "--force", "--ignore", self.container_name)

    def restart(self, *extra: str) -> None:
        self.stop()
        self.start(*extra)

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class WebhookService:
    """An installation of Muster and the stand-in for its Service
    `muster-system/muster-webhooks` on 127.0.0.1: each connection the API server opens
    goes to a replica that says it is ready, as the Service's endpoints would send it;
    TLS passes through untouched, so the API server checks the replica's certificate
    (from the installed Secret) itself. `flags` go to every replica."""

    kubeconfig: Path
    credentials: Path
    settings: dict[str, str]
    flags: tuple[str, ...] = ()
    port: int = field(default_factory=free_port)
    replicas: list[OperatorProcess] = field(default_factory=list)
    _server: socketserver.ThreadingTCPServer | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> None:
        service = self

        class Forward(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                service.forward(self.request)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", self.port), Forward)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def forward(self, client: socket.socket) -> None:
        for replica in self.replicas:
            if not replica.endpoint():
                continue
            try:
                peer = socket.create_connection(("127.0.0.1", replica.webhook_port), timeout=30)
            except OSError:
                continue  # it went away since: as an endpoint removed, try the next
            peer.settimeout(None)  # the timeout is the dial's: a kept-alive connection idles
            with peer:
                pump = threading.Thread(target=_pump, args=(peer, client), daemon=True)
                pump.start()
                _pump(client, peer)
                pump.join(timeout=30)
            return
        # As a Service without ready endpoints: the connection is refused.
        for replica in self.replicas:
            replica.note("webhook service: a connection refused, no replica is an endpoint")


def podman(*args: str) -> None:
    """A podman command whose failure (its container already gone) does not matter."""
    subprocess.run(["podman", *args], capture_output=True, check=False)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes until `source` closes, then close `sink`'s sending side."""
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
