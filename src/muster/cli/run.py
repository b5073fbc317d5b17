"""`muster run`: the operator (scheduling loop on the leader, webhooks on every replica)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from muster.operator import logs
from muster.operator.app import Operator
from muster.operator.config import add_arguments, from_arguments

EXIT_BAD_CONFIGURATION = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `run` to the `muster` command."""
    parser = subparsers.add_parser(
        "run",
        help="run the operator against a cluster",
        description=(
            "Run Muster's operator: admission webhooks that gate member pods, informers "
            "that keep the cluster in view, and (on the replica holding the leader Lease) "
            "the scheduling loop that admits whole gangs. Every flag can also be set by "
            "its MUSTER_* variable."
        ),
    )
    add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = from_arguments(args, os.environ)
    except ValueError as error:
        print(f"muster run: {error}", file=sys.stderr)
        return EXIT_BAD_CONFIGURATION
    logs.configure(config.log_level, config.log_format)
    return asyncio.run(Operator(config).run())
