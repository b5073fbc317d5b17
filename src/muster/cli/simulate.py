"""`muster simulate FILE...`: the decision engine over YAML files, no cluster needed.

This module is the only part of a simulation that touches files and streams: it reads
and parses the YAML, hands the documents to `muster.simulation`, and prints.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TextIO

from muster.api.durations import parse_duration
from muster.api.manifests import ManifestSyntaxError, parse_manifests
from muster.api.times import parse_rfc3339
from muster.cli.files import UnreadableFileError, read_text
from muster.operator.config import topology_levels_argument
from muster.scheduler import DEFAULT_HORIZON_SECONDS, EngineConfig, format_duration
from muster.simulation.documents import Document, InvalidInputError, Problem
from muster.simulation.render import render_table, report_to_json
from muster.simulation.run import DEFAULT_MAX_CYCLES, NoSteadyStateError, simulate
from muster.simulation.timeline import render_timeline, timeline, timeline_to_json

EXIT_OK = 0
EXIT_NO_STEADY_STATE = 1
EXIT_INVALID_INPUT = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `simulate` to the `muster` command."""
    parser = subparsers.add_parser(
        "simulate",
        help="run the gang scheduler offline over YAML files",
        description=(
            "Run Muster's decision engine over Nodes, Pods, PriorityClasses, PodGroups, "
            "Workloads and opted-in Jobs read from YAML files, cycle after cycle until "
            "nothing changes, and report what happens to every PodGroup."
        ),
        epilog=(
            "Exit status: 0 with a report; 1 when the cluster never settles; 2 for invalid "
            "input, one line per problem on stderr (file:document: message)."
        ),
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="multi-document YAML; '-' reads stdin"
    )
    parser.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="report format"
    )
    parser.add_argument(
        "--at",
        "--now",
        dest="at",
        type=_timestamp,
        default=None,
        metavar="TIME",
        help="the clock of the run, RFC 3339 (default: now, as the operator's would be)",
    )
    parser.add_argument(
        "--max-cycles",
        type=_positive,
        default=DEFAULT_MAX_CYCLES,
        metavar="N",
        help="give up when the cluster still changes after N cycles (default %(default)s)",
    )
    _add_engine_arguments(parser)
    _add_timeline_arguments(parser)
    parser.set_defaults(handler=run)


def _add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """The operator's own settings of the engine, so a run decides as the operator would."""
    parser.add_argument(
        "--starvation-seconds",
        type=_seconds,
        default=EngineConfig().starvation_seconds,
        metavar="S",
        help="the operator's --starvation-seconds: how long a gang waits before smaller "
        "gangs behind it may no longer take its capacity (default %(default)g)",
    )
    parser.add_argument(
        "--max-rollbacks",
        type=_count,
        default=EngineConfig().max_rollbacks,
        metavar="N",
        help="the operator's --max-rollbacks: after N rollbacks in a row that "
        "kube-scheduler caused (status.refusals), a gang is not planned until a node "
        "changes; 0: no limit (default %(default)s)",
    )
    parser.add_argument(
        "--topology-levels",
        type=topology_levels_argument,
        default=(),
        metavar="KEYS",
        help="the operator's --topology-levels: node label keys of the topology levels, "
        "widest first, comma-separated; a gang preferring one level falls back to the "
        "wider ones in this order",
    )


def _add_timeline_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="instead of the report, run the engine forward in time (pods end after their "
        "expected runtime) and show when each gang starts and ends",
    )
    parser.add_argument(
        "--horizon",
        type=_duration,
        default=DEFAULT_HORIZON_SECONDS,
        metavar="DURATION",
        help="how far --timeline looks ahead, e.g. 90m "
        f"(default {format_duration(DEFAULT_HORIZON_SECONDS)})",
    )


def run(args: argparse.Namespace) -> int:
    """Read, simulate, print; problems go to stderr as `file:document: message`."""
    # What if this happened now: a gang's wait, and a new Job's start, count from the
    # clock on the wall, not from when the newest object of the input was made.
    args.now = args.at or datetime.now(UTC)
    with _cycle_collection_paused():
        return _run(args)


@contextlib.contextmanager
def _cycle_collection_paused() -> Iterator[None]:
    """A run builds a whole cluster out of millions of small containers and lets go of
    almost none before it ends, so the cyclic collector would scan that growing heap
    again and again for garbage that is not there: a third of a run over 5,000 nodes
    (bench/simulate), for the same peak memory. Reference counting still frees what a
    run drops."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _run(args: argparse.Namespace) -> int:
    try:
        documents = [doc for name in args.files for doc in read_documents(name)]
        config = EngineConfig(
            starvation_seconds=args.starvation_seconds,
            max_rollbacks=args.max_rollbacks,
            topology_levels=args.topology_levels,
        )
        if args.timeline:
            return _run_timeline(documents, args, config)
        report = simulate(documents, now=args.now, config=config, max_cycles=args.max_cycles)
    except InvalidInputError as error:
        _print_problems(error.problems, sys.stderr)
        return EXIT_INVALID_INPUT
    except NoSteadyStateError as error:
        print(f"muster simulate: {error}", file=sys.stderr)
        return EXIT_NO_STEADY_STATE
    _print_problems(report.warnings, sys.stderr)
    if args.output == "json":
        json.dump(report_to_json(report), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_table(report))
    return EXIT_OK


def _run_timeline(documents: list[Document], args: argparse.Namespace, config: EngineConfig) -> int:
    result, words, warnings = timeline(
        documents, now=args.now, config=config, horizon=args.horizon, max_cycles=args.max_cycles
    )
    _print_problems(warnings, sys.stderr)
    if args.output == "json":
        json.dump({"timeline": timeline_to_json(result, words)}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_timeline(result, words))
    if not result.complete:
        print(
            f"muster simulate: the forecast stopped after {result.cycles} cycles; "
            "raise --max-cycles to see further",
            file=sys.stderr,
        )
    return EXIT_OK


def read_documents(name: str) -> list[Document]:
    """Every non-empty document of one file ('-' is stdin), numbered from 1."""
    try:
        text = read_text(name)
    except UnreadableFileError as error:
        raise InvalidInputError([Problem(name, str(error))]) from error
    try:
        return [Document(name, parsed.index, parsed.body) for parsed in parse_manifests(text)]
    except ManifestSyntaxError as error:
        raise InvalidInputError([Problem(f"{name}:{error.index}", str(error))]) from error


def _timestamp(text: str) -> datetime:
    try:
        return datetime.fromtimestamp(parse_rfc3339(text), UTC)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time: {error}") from error


def _duration(text: str) -> float:
    seconds = parse_duration(text)
    if seconds is None:
        raise argparse.ArgumentTypeError(f"not a duration such as 90m or 24h: {text!r}")
    return seconds


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}")
    return value


def _print_problems(problems: tuple[Problem, ...], stream: TextIO) -> None:
    for problem in problems:
        print(problem, file=stream)
