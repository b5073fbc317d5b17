"""The cluster's commands: `up`, `down`, `restart`, `status` (hack/cluster.py's).

`up` starts what is not running and, when a port chosen free was taken before its
component bound it, starts again with other ports; `down` stops exactly the processes
whose pids `up` recorded and removes the state.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from devtools.builds import versions
from devtools.cluster import control_plane, layout
from devtools.cluster.layout import KUEUE, log
from devtools.cluster.probes import https_ok
from devtools.cluster.processes import (
    PortTakenError,
    alive,
    components,
    fail,
    pid_of,
    start,
    stop,
    stop_all,
    wait_for,
)
from devtools.kubectl import Kubectl, KubectlError


def running_version() -> str:
    """The Kubernetes version the cluster in layout.STATE was started with."""
    recorded = layout.STATE / "version"
    return recorded.read_text().strip() if recorded.exists() else versions()["KUBE_VERSION"]


def healthy() -> bool:
    if not layout.KUBECONFIG.exists() or not all(alive(pid_of(c)) for c in components()):
        return False
    try:
        Kubectl(layout.KUBECONFIG)("get", "--raw", "/readyz")
    except KubectlError:
        return False
    return True


START_ATTEMPTS = 3


def up(args: argparse.Namespace) -> None:
    """Start what is not running; a start that fails, however it fails, stops the
    components it started (their logs stay for the reader; the next `up` removes
    them), so nothing is left running that nobody stops."""
    try:
        if healthy():
            running, asked = running_version(), versions()["KUBE_VERSION"]
            if running != asked:
                fail(f"Kubernetes {running} is up here, not {asked}: `down` first", None)
            log(f"already up; KUBECONFIG={layout.KUBECONFIG}")
        else:
            start_with_free_ports(args)
        if args.kueue and not alive(pid_of(KUEUE)):
            control_plane.start_kueue(args.kueue_pods_ready_timeout)
    except BaseException:
        for name in reversed(components()):
            stop(name)
        raise


def start_with_free_ports(args: argparse.Namespace) -> None:
    """Start the control plane, again with other ports when one was taken meanwhile.

    Ports are chosen free and only bound by the component later; in between, any
    process's outgoing connection may get the same port from the kernel (another
    cluster's clients, on the same machine, make thousands)."""
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            control_plane.start_control_plane(args)
            return
        except PortTakenError as error:
            if attempt == START_ATTEMPTS:
                fail(str(error), None)
            log(f"{error}; starting again with other ports")
            down(args)


def down(_: argparse.Namespace) -> None:
    stop_all()


def restart(args: argparse.Namespace) -> None:
    """Stop one component and start it again with the command line `up` gave it.

    For fault tests: the rest of the cluster keeps running, and its clients see the
    component go away and come back. Waits until kube-apiserver is ready again.
    """
    name = args.component
    command = json.loads((layout.STATE / "commands" / f"{name}.json").read_text())
    stop(name)
    start(name, command)
    if name == "kube-apiserver":
        server = json.loads(layout.KUBECONFIG.read_text())["clusters"][0]["cluster"]["server"]
        pki = layout.STATE / "pki"
        wait_for("kube-apiserver /readyz", lambda: https_ok(f"{server}/readyz", pki), name)


def status(_: argparse.Namespace) -> None:
    if not layout.STATE.exists():
        log("down")
        sys.exit(1)
    ok = True
    for name in components():
        pid = pid_of(name)
        state = "running" if alive(pid) else "NOT RUNNING"
        ok &= alive(pid)
        rss = ""
        if alive(pid):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss = f"  rss {int(line.split()[1]) // 1024} MiB"
        log(f"{name:<24} {state} (pid {pid}){rss}")
    mode = (layout.STATE / "mode").read_text().strip() if (layout.STATE / "mode").exists() else "?"
    log(f"Kubernetes {running_version()}, mode {mode}; KUBECONFIG={layout.KUBECONFIG}")
    if ok:
        print(
            Kubectl(layout.KUBECONFIG)("get", "nodes", "-L", "topology.kubernetes.io/zone").stdout,
            end="",
        )
    sys.exit(0 if ok else 1)
