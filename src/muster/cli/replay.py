"""`muster replay TRACE`: decide a recorded operator's cycles again, offline.

The trace is what `muster run --record-trace FILE` wrote: every change that reached
the engine's state and every cycle's decisions. The replay feeds the changes through
the same intake and engine at the recorded clocks; it exits 0 when every cycle
decided the same, else prints where it first differs and exits 1 (a decision the
engine alone cannot explain: a defect worth reporting, with the trace).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from muster.simulation.replay import first_difference, read_trace, replay

EXIT_SAME = 0
EXIT_DIFFERENT = 1
EXIT_UNREADABLE = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `replay` to the `muster` command."""
    parser = subparsers.add_parser(
        "replay",
        help="decide the cycles of a recorded operator trace again and compare",
        description=(
            "Replay a trace recorded by `muster run --record-trace FILE`: each cycle is "
            "decided again from the recorded inputs and clock. Exits 0 when every "
            "decision is the same, 1 (printing the first difference) when one is not."
        ),
    )
    parser.add_argument("trace", metavar="TRACE", type=Path, help="the recorded trace")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        lines = read_trace(args.trace)
    except (OSError, ValueError) as error:
        print(f"muster replay: cannot read {args.trace}: {error}")
        return EXIT_UNREADABLE
    cycles = replay(lines)
    difference = first_difference(cycles)
    if difference is not None:
        print(difference)
        return EXIT_DIFFERENT
    print(f"{len(cycles)} cycle(s) replayed: every decision the same")
    return EXIT_SAME
