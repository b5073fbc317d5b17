"""`muster validate FILE...`: check manifests offline, for CI pipelines with no cluster.

PodGroups and Workloads are checked against the same schemas and rules the API
server enforces with Muster's CRDs installed, and the rules of Muster's admission
webhooks (a PodGroup's ``workloadRef`` is resolved among the files given); opted-in
Jobs against the rules of Muster's admission webhook. Other objects pass
untouched. Each problem is one line, ``file:document: field: message``
(documents count from 1), and the exit status is 1 when there is any; a clean run
says in one line what it checked.

What admission would warn about is printed too, as ``file:document: warning: ...``
lines that change no exit status (`muster.api.advice`): keys under
``scheduling.muster.dev/`` that Muster does not know, and topology levels that no
node carries, judged on the Nodes among the input (such as the output of
``kubectl get nodes -o yaml``); without any, the run says it could not check them.
"""

from __future__ import annotations

import argparse
import functools
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from muster.api.advice import bounded, key_warnings, named_levels, topology_warnings
from muster.api.constants import GROUP, POD_GROUP_KIND, WORKLOAD_KIND
from muster.api.manifests import ManifestSyntaxError, parse_manifests
from muster.api.problems import Problem
from muster.api.references import WorkloadLookup
from muster.api.validation import validate_object
from muster.cli.files import UnreadableFileError, read_text
from muster.operator.config import topology_levels_argument

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
            "(file:document: field: message) and exits 1 if there is any; else one line "
            "saying what was checked."
        ),
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="multi-document YAML; '-' reads stdin"
    )
    parser.add_argument(
        "--topology-levels",
        type=topology_levels_argument,
        default=(),
        metavar="KEYS",
        help="the operator's --topology-levels: a preferred topology level must be one "
        "of them (without it, any label key)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check every file, print every problem and warning; when there is no problem,
    one line saying what was checked (and, when topology levels could not be, why)."""
    documents, unreadable = _read(args.files)
    lines = [*unreadable, *_problem_lines(documents, args.topology_levels)]
    node_keys = _node_label_keys(documents)
    for line in [*lines, *_warning_lines(documents, node_keys)]:
        print(line)
    if not lines:
        unchecked = "" if node_keys is not None or not _name_levels(documents) else NO_NODES
        clean = summary(len(args.files), [document.body for document in documents])
        print(f"{clean}; {unchecked}" if unchecked else clean)
    return EXIT_PROBLEMS if lines else EXIT_VALID


NO_NODES = "topology levels not checked against nodes: no Node among the input"


def _node_label_keys(documents: Sequence[_Document]) -> set[str] | None:
    """The label keys of the Nodes among the input (those of a List too, as `kubectl
    get nodes -o yaml` prints them); None when there is none."""
    nodes: list[dict[str, Any]] = []
    for body in (document.body for document in documents):
        if not isinstance(body, dict):
            continue
        items = body.get("items") if body.get("kind") == "List" else [body]
        nodes.extend(
            item for item in items or [] if isinstance(item, dict) and item.get("kind") == "Node"
        )
    if not nodes:
        return None
    return {key for node in nodes for key in (node.get("metadata") or {}).get("labels") or {}}


def _name_levels(documents: Sequence[_Document]) -> bool:
    return any(isinstance(d.body, dict) and named_levels(d.body) for d in documents)


def _warning_lines(documents: Sequence[_Document], node_keys: set[str] | None) -> Iterator[str]:
    """``file:document: warning: ...`` for what admission would warn about."""
    for document in documents:
        if not isinstance(document.body, dict):
            continue
        found = key_warnings(document.body)
        if node_keys is not None:
            found.extend(topology_warnings(document.body, node_keys))
        for warning in bounded(found):
            yield f"{document.file}:{document.index}: warning: {warning}"


def summary(files: int, bodies: Sequence[Any]) -> str:
    """`ok: 2 files, 5 documents (1 PodGroup, 1 Workload, 2 Jobs, 1 other)`: what a
    clean run looked at, so that an empty glob or a wrong file does not pass unseen."""
    kinds = Counter(_kind(body) for body in bodies)
    counted = [
        _count(kinds.pop(kind), kind)
        for kind in (POD_GROUP_KIND, WORKLOAD_KIND, "Job")
        if kind in kinds
    ]
    others = sum(kinds.values())
    if others:
        counted.append(f"{others} other")
    detail = f" ({', '.join(counted)})" if counted else ""
    return f"ok: {_count(files, 'file')}, {_count(len(bodies), 'document')}{detail}"


def _kind(body: Any) -> str:
    """PodGroup and Workload (Muster's), Job (batch/v1): the kinds that are checked."""
    api_version = str(body.get("apiVersion", "")) if isinstance(body, dict) else ""
    kind = body.get("kind") if isinstance(body, dict) else None
    if api_version.split("/")[0] == GROUP and kind in (POD_GROUP_KIND, WORKLOAD_KIND):
        return str(kind)
    return "Job" if (api_version, kind) == ("batch/v1", "Job") else ""


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


@dataclass(frozen=True, slots=True)
class _Document:
    file: str
    index: int
    body: Any


def _read(names: Sequence[str]) -> tuple[list[_Document], list[str]]:
    """Every document of the files ('-' is stdin), and a problem line for each file
    that cannot be read; a file that stops being YAML is a problem document."""
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
    return documents, unreadable


def _problem_lines(documents: Sequence[_Document], levels: Sequence[str]) -> Iterator[str]:
    """``file:document: field: message`` for each problem. The documents are read as
    one set: a PodGroup's ``workloadRef`` must name a Workload among them, as the API
    server admits one only when its Workload exists."""
    lookup = _workload_lookup(documents)
    for document in documents:
        if isinstance(document.body, ManifestSyntaxError):
            yield f"{document.file}:{document.index}: {document.body}"
            continue
        in_namespace = functools.partial(_in_namespace, lookup, _namespace(document.body))
        problems = document_problems(document.body, workloads=in_namespace, levels=levels)
        for problem in problems:
            yield f"{document.file}:{document.index}: {problem}"


def document_problems(
    body: Any, *, workloads: WorkloadLookup | None = None, levels: Sequence[str] = ()
) -> list[Problem]:
    """The problems of one parsed document; ``workloads`` resolves references, and
    ``levels`` are the topology levels a preferred one must be among (if any)."""
    if not isinstance(body, dict):
        return [Problem("", "not a Kubernetes object (a YAML mapping is expected)")]
    missing = [
        Problem(field, "Required value")
        for field in ("apiVersion", "kind")
        if not isinstance(body.get(field), str)
    ]
    return missing or validate_object(body, workloads=workloads, topology_levels=levels)


def _workload_lookup(documents: Sequence[_Document]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """The Workloads of the input by namespace (empty when unset) and name."""
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    for body in (document.body for document in documents):
        name = (body.get("metadata") or {}).get("name") if _kind(body) == WORKLOAD_KIND else None
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
