"""The components as processes: started detached with their pid and command line
recorded, waited for with a health check, stopped by their recorded pid."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
from collections.abc import Callable
from pathlib import Path

from devtools.cluster import layout
from devtools.cluster.layout import COMPONENTS, KUEUE, MUSTER, log
from devtools.kubectl import KubectlError


class PortTakenError(Exception):
    """A component could not listen: its port, free when chosen, was taken since."""


def start(name: str, args: list[str], env: dict[str, str] | None = None) -> None:
    logs = layout.STATE / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (layout.STATE / "commands").mkdir(exist_ok=True)
    (layout.STATE / "commands" / f"{name}.json").write_text(json.dumps(args) + "\n")
    with (logs / f"{name}.log").open("a") as out:
        proc = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
    (layout.STATE / "pids").mkdir(exist_ok=True)
    (layout.STATE / "pids" / f"{name}.pid").write_text(f"{proc.pid}\n")
    log(f"started {name} (pid {proc.pid}, log {logs / f'{name}.log'})")


def pid_of(name: str) -> int | None:
    path = layout.STATE / "pids" / f"{name}.pid"
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # A zombie counts as dead.
    try:
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False


def wait_for(
    what: str, check: Callable[[], bool], component: str | None, timeout: float = 120.0
) -> None:
    """Poll `check` until it holds; on failure name the component and its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if component and not alive(pid_of(component)):
            fail(f"{component} exited while waiting for {what}", component)
        try:
            if check():
                return
        except (OSError, urllib.error.URLError, subprocess.CalledProcessError, KubectlError):
            pass
        time.sleep(0.5)
    fail(f"timed out after {timeout:.0f}s waiting for {what}", component)


def fail(message: str, component: str | None) -> None:
    where = f"; see {layout.STATE / 'logs' / f'{component}.log'}" if component else ""
    tail: list[str] = []
    if component:
        tail = (layout.STATE / "logs" / f"{component}.log").read_text(errors="replace").splitlines()
    if any("address already in use" in line for line in tail[-15:]):
        raise PortTakenError(f"{component}'s port was taken: {message}")
    log(f"FAILED: {message}{where}")
    for line in tail[-15:]:
        print(f"    {line}", file=sys.stderr)
    sys.exit(1)


def stop(name: str) -> None:
    """SIGTERM to the component's process group, SIGKILL after 10 s."""
    pid = pid_of(name)
    if not alive(pid):
        return
    assert pid is not None
    os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        os.killpg(pid, signal.SIGKILL)
    log(f"stopped {name} (pid {pid})")


def components() -> tuple[str, ...]:
    """The components `up` started, in start order: Kueue too when it was asked for,
    and Muster when `make run` started it (hack/run.py)."""
    return tuple(
        name
        for name in (*COMPONENTS, KUEUE, MUSTER)
        if name in COMPONENTS or pid_of(name) is not None
    )


def stop_all() -> None:
    """Stop every component `components` names, last started first, and remove the
    state: what `down` does, and what a start does first with a partial cluster."""
    for name in reversed(components()):
        stop(name)
    shutil.rmtree(layout.STATE, ignore_errors=True)
    log("down")
