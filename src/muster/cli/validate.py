"""`muster validate FILE...`: check manifests offline, for CI pipelines with no cluster.

PodGroups and Workloads are checked against the same schemas and rules the API
server enforces with Muster's CRDs installed, and the rules of Muster's admission
webhooks (a PodGroup's ``workloadRef`` is resolved among the files given); opted-in
Jobs against the rules of Muster's admission webhook. Other objects pass
untouched. Each problem is one line, ``file:document: field: message``
(documents count from 1), and the exit status is 1 when there is any.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from muster.api.constants import GROUP, WORKLOAD_KIND
from muster.api.manifests import ManifestSyntaxError, parse_manifests
from muster.api.problems import Problem
from muster.api.references import WorkloadLookup
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
    lines = list(problem_lines(args.files))
    for line in lines:
        print(line)
    return EXIT_PROBLEMS if lines else EXIT_VALID


@dataclass(frozen=True, slots=True)
class _Document:
    file: str
    index: int
    body: Any


def problem_lines(names: Sequence[str]) -> Iterator[str]:
    """``file:document: field: message`` for each problem in the files ('-' is
    stdin); a file that cannot be read, or stops being YAML, is itself a problem.

    The files are read as one set: a PodGroup's ``workloadRef`` must name a
    Workload among them, as the API server admits one only when its Workload exists.
    """
    documents: list[_Document] = []
    unreadable: list[str] = []
    for name in names:
        try:
            text = read_text(name)
        except UnreadableFileError as error:
            unreadable.append(f"{name}: {error}")
            continue
        try:
            for parsed in parse_manifests(text):
                documents.append(_Document(name, parsed.index, parsed.body))
        except ManifestSyntaxError as error:
            documents.append(_Document(name, error.index, error))
    lookup = _workload_lookup(documents)
    yield from unreadable
    for document in documents:
        if isinstance(document.body, ManifestSyntaxError):
            yield f"{document.file}:{document.index}: {document.body}"
            continue
        in_namespace = functools.partial(_in_namespace, lookup, _namespace(document.body))
        for problem in document_problems(document.body, workloads=in_namespace):
            yield f"{document.file}:{document.index}: {problem}"


def document_problems(body: Any, *, workloads: WorkloadLookup | None = None) -> list[Problem]:
    """The problems of one parsed document; ``workloads`` resolves references."""
    if not isinstance(body, dict):
        return [Problem("", "not a Kubernetes object (a YAML mapping is expected)")]
    missing = [
        Problem(field, "Required value")
        for field in ("apiVersion", "kind")
        if not isinstance(body.get(field), str)
    ]
    return missing or validate_object(body, workloads=workloads)


def _workload_lookup(documents: Sequence[_Document]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """The Workloads of the input by namespace (empty when unset) and name."""
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    for document in documents:
        body = document.body
        if (
            isinstance(body, dict)
            and body.get("kind") == WORKLOAD_KIND
            and str(body.get("apiVersion", "")).split("/")[0] == GROUP
        ):
            name = (body.get("metadata") or {}).get("name")
            if isinstance(name, str):
                found[(_namespace(body), name)] = body
    return found


def _in_namespace(
    workloads: Mapping[tuple[str, str], Mapping[str, Any]], namespace: str, name: str
) -> Mapping[str, Any] | None:
    return workloads.get((namespace, name))


def _namespace(body: Any) -> str:
    metadata = body.get("metadata") if isinstance(body, dict) else None
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return namespace if isinstance(namespace, str) else ""
