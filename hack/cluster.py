#!/usr/bin/env python3
"""A real, local Kubernetes control plane for Muster's tests and demo.

Runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK (which
simulates the nodes and their kubelets) as plain processes on loopback ports, from
the binaries `hack/build.sh` compiles. Only the standard library is used, so this
works before any virtualenv exists.

    cluster.py up [--nodes FILE] [--job-scheduling-field | --native-gang] [--kueue] [--audit]
                  [--kueue-pods-ready-timeout DURATION]
                  [--no-watch-cache] [--priority-and-fairness]
                  [--nodes-timeout SECONDS] [--node-lease-seconds SECONDS]
    cluster.py down
    cluster.py status
    cluster.py restart COMPONENT    (stop one component and start it as it was started)
    cluster.py compact              (compact etcd's history up to its current revision)

The machinery is devtools/cluster/, one module per job; this is its command line.
State lives in `.cluster/` of the checkout (kubeconfig, PKI, logs, pids); `down`
stops exactly the processes whose pids `up` recorded and removes that folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Run as a script (`python3 hack/cluster.py`), before any virtualenv: the tools it
# runs are the checkout's own.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.cluster import commands, etcd
from devtools.cluster.kwok import DEFAULT_NODE_LEASE_SECONDS
from devtools.cluster.layout import COMPONENTS, DEFAULT_NODES, KUEUE, log
from devtools.cluster.processes import PortTakenError


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up_parser = sub.add_parser("up", help="start the control plane (harmless when already up)")
    up_parser.add_argument(
        "--nodes", default=str(DEFAULT_NODES), help="YAML file of Node objects for KWOK to simulate"
    )
    mode = up_parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--job-scheduling-field",
        dest="mode",
        action="store_const",
        const="job-field",
        help="API server keeps Job spec.scheduling (native gang scheduling off)",
    )
    mode.add_argument(
        "--native-gang",
        dest="mode",
        action="store_const",
        const="native-gang",
        help="enable the native 1.37 gang scheduling in every component",
    )
    up_parser.add_argument(
        "--kueue",
        action="store_true",
        help="run Kueue's manager beside the control plane (webhooks on loopback)",
    )
    up_parser.add_argument(
        "--kueue-pods-ready-timeout",
        metavar="DURATION",
        help="Kueue's waitForPodsReady timeout (default: hack/kueue.py's, for the tests)",
    )
    up_parser.add_argument(
        "--nodes-timeout",
        type=float,
        default=120.0,
        help="seconds to wait for every node to be Ready (thousands of nodes need more)",
    )
    up_parser.add_argument(
        "--node-lease-seconds",
        type=int,
        default=DEFAULT_NODE_LEASE_SECONDS,
        help="node Lease duration; KWOK renews every quarter of it (longer for many nodes)",
    )
    up_parser.add_argument(
        "--audit",
        action="store_true",
        help="log every API request at Metadata level to logs/audit.log (for benchmarks)",
    )
    up_parser.add_argument(
        "--priority-and-fairness",
        action="store_true",
        help="API Priority and Fairness on (off by default: one client must not wait on "
        "another's seats in benchmarks; the soak throttles the operator with it)",
    )
    up_parser.add_argument(
        "--no-watch-cache",
        dest="watch_cache",
        action="store_false",
        help="serve watches from etcd, not the API server's cache (for fault tests)",
    )
    up_parser.set_defaults(handler=commands.up, mode="plain")
    sub.add_parser("down", help="stop what `up` started and remove its state").set_defaults(
        handler=commands.down
    )
    sub.add_parser("status", help="component health, memory and nodes").set_defaults(
        handler=commands.status
    )
    restart_parser = sub.add_parser("restart", help="stop one component and start it again")
    restart_parser.add_argument("component", choices=(*COMPONENTS, KUEUE))
    restart_parser.set_defaults(handler=commands.restart)
    sub.add_parser("compact", help="compact etcd up to its current revision").set_defaults(
        handler=etcd.compact
    )
    args = parser.parse_args()
    try:
        args.handler(args)
    except PortTakenError as error:  # where no fresh ports can be chosen (a restart)
        log(f"FAILED: {error}")
        sys.exit(1)


if __name__ == "__main__":
    main()
