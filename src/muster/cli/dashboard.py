"""`muster dashboard`: the read-only web page, served on this machine.

It reads the cluster with the user's kubeconfig, found as `muster explain` finds it,
and decides with the same engine flags, so the page tells what the operator decides.
It binds to 127.0.0.1 unless `--address` says otherwise, and writes nothing. It asks
the browser for no token (the user's own rights govern what it reads), so it answers
only requests addressed to its own address (`guards.addressed`): a page of another
site whose name was made to resolve to this machine (DNS rebinding) gets a 403.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from dataclasses import replace

from kubernetes_asyncio.config import ConfigException

from muster.cli.explain import EXIT_NO_CLUSTER, EXIT_OK, find_kubeconfig
from muster.client.connection import connect
from muster.client.kube import KubeError
from muster.operator.config import (
    ENGINE_FIELDS,
    OperatorConfig,
    add_arguments,
    from_arguments,
)
from muster.operator.dashboard.feed import Feed
from muster.operator.dashboard.guards import addressed
from muster.operator.dashboard.pages import build_app
from muster.operator.health import serve

DEFAULT_PORT = 8090
FORECAST_FIELDS = ("estimate_horizon", "estimate_budget")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `dashboard` to the `muster` command."""
    parser = subparsers.add_parser(
        "dashboard",
        help="serve a read-only web page of the queue, the domains and the forecast",
        description=(
            "Watch the cluster (nodes, pods, PodGroups, Jobs and what else the engine "
            "reads), run Muster's decision engine on it after each change, and serve the "
            "queue, the running gangs, each topology domain's capacity and the forecast "
            "as a web page, live. Read-only."
        ),
    )
    parser.add_argument(
        "--kubeconfig",
        default=None,
        help="kubeconfig (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)",
    )
    parser.add_argument("--address", default="127.0.0.1", help="address to serve on")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to serve on")
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name the page may be reached by, beside its own address (repeatable); "
        "requests for any other name are refused",
    )
    add_arguments(parser, only=(*ENGINE_FIELDS, *FORECAST_FIELDS))
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    kubeconfig = find_kubeconfig(args.kubeconfig, os.environ)
    try:
        config = replace(from_arguments(args, os.environ), kubeconfig=kubeconfig)
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(config, args.address, args.port, args.allowed_host))
        return EXIT_OK
    except ConfigException as error:
        where = kubeconfig or "no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a pod"
        print(f"muster dashboard: cannot connect to a cluster ({where}): {error}", file=sys.stderr)
        return EXIT_NO_CLUSTER
    except (KubeError, OSError) as error:
        print(f"muster dashboard: {error}", file=sys.stderr)
        return EXIT_NO_CLUSTER


async def _serve(config: OperatorConfig, address: str, port: int, allowed_hosts: list[str]) -> None:
    kube = await connect(config.kubeconfig, user_agent="muster-dashboard")
    feed = Feed(kube, config)
    runner = await serve(build_app(feed, [addressed(address, allowed_hosts)]), address, port)
    print(f"muster dashboard: http://{address}:{port}/ (Ctrl-C to stop)", flush=True)
    try:
        await feed.run()
    finally:
        await runner.cleanup()
        await kube.close()
