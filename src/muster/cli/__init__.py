"""The `muster` command (also installed as the kubectl plugin `kubectl muster`).

Each subcommand lives in its own module that exposes ``register(subparsers)``; this
module only assembles them, so adding a subcommand never touches the others.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import import_module

# First, so that kopf, which a subcommand imports, finds kubernetes-asyncio deferred
# (see `muster.client.lean_client`).
import muster.operator  # noqa: F401

# Subcommand modules, in the order `muster --help` lists them.
SUBCOMMANDS: tuple[str, ...] = ("run", "simulate", "validate", "explain", "dashboard", "replay")


def build_parser() -> argparse.ArgumentParser:
    """Assemble the parser from every subcommand module."""
    parser = argparse.ArgumentParser(
        prog="muster", description="All-or-nothing gang scheduling for Kubernetes."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        import_module(f"muster.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse, dispatch, and turn the handler's result into an exit code."""
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
