"""`muster validate FILE...`: check manifests offline, for CI pipelines with no cluster.

PodGroups and Workloads are checked against the same schemas and rules the API
server enforces with Muster's CRDs installed; opted-in Jobs against the rules of
Muster's admission webhook. Other objects pass untouched. Each problem is one
line, ``file:document: field: message`` (documents count from 1), and the exit
status is 1 when there is any.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from muster.api.manifests import ManifestSyntaxError, parse_manifests
from muster.api.problems import Problem
from muster.api.validation import validate_object
from muster.cli.files import UnreadableFileError, read_text

EXIT_VALID = 0
EXIT_PROBLEMS = 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `validate` to the `muster` command."""
    parser = subparsers.add_parser(
        "validate",
        help="check PodGroups, Workloads and opted-in Jobs in YAML files",
        description=(
            "Check PodGroups, Workloads and opted-in Jobs in YAML files against Muster's "
            "schemas and admission rules, without a cluster. Prints one line per problem "
            "(file:document: field: message) and exits 1 if there is any."
        ),
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="multi-document YAML; '-' reads stdin"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check every file, print every problem, and say whether there was any."""
    lines = [line for name in args.files for line in problem_lines(name)]
    for line in lines:
        print(line)
    return EXIT_PROBLEMS if lines else EXIT_VALID


def problem_lines(name: str) -> Iterator[str]:
    """``file:document: field: message`` for each problem in one file ('-' is
    stdin); a file that cannot be read, or stops being YAML, is itself a problem."""
    try:
        text = read_text(name)
    except UnreadableFileError as error:
        yield f"{name}: {error}"
        return
    try:
        for document in parse_manifests(text):
            for problem in document_problems(document.body):
                yield f"{name}:{document.index}: {problem}"
    except ManifestSyntaxError as error:
        yield f"{name}:{error.index}: {error}"


def document_problems(body: Any) -> list[Problem]:
    """The problems of one parsed document."""
    if not isinstance(body, dict):
        return [Problem("", "not a Kubernetes object (a YAML mapping is expected)")]
    missing = [
        Problem(field, "Required value")
        for field in ("apiVersion", "kind")
        if not isinstance(body.get(field), str)
    ]
    return missing or validate_object(body)
