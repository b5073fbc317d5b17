"""Manifests as text: YAML or JSON documents read the way the API server reads them.

Pure (text in, mappings out), so the CLI commands that read files share it and
tests need no files. A dump of a large cluster is tens of megabytes, so JSON (what
`kubectl get -o json` writes) is read by the JSON parser and YAML by libyaml: the
pure-Python YAML reader takes the better part of a minute over such a dump.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

try:
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # PyYAML built without libyaml: the same rules, read more slowly
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_JSON_OPENERS = ("{", "[")


class ManifestLoader(_SafeLoader):
    """Safe YAML where timestamps stay strings, as they are in API objects (so an
    RFC 3339 field validates as the string its schema says it is)."""


ManifestLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in _SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """One non-empty document; ``index`` counts the documents of the text from 1."""

    index: int
    body: Any


class ManifestSyntaxError(ValueError):
    """The text is not YAML; ``index`` is the document where reading stopped."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


def parse_manifests(text: str) -> Iterator[ParsedDocument]:
    """Every non-empty document, in order; raises :class:`ManifestSyntaxError` at
    the first one that is not YAML, after yielding those before it.

    Text that is a sequence of JSON values is read as JSON, one document per value;
    anything else (including JSON-looking text that is not strict JSON, such as a
    YAML flow mapping) is read as YAML, of which JSON is a part.
    """
    documents = _json_documents(text) if text.lstrip().startswith(_JSON_OPENERS) else None
    if documents is not None:
        yield from documents
        return
    yield from _yaml_documents(text)


def _json_documents(text: str) -> list[ParsedDocument] | None:
    """The JSON values of the text, or None when it is not strict JSON throughout."""
    decoder = json.JSONDecoder(parse_constant=_refuse_constant)
    documents: list[ParsedDocument] = []
    position = _skip_space(text, 0)
    index = 0
    try:
        while position < len(text):
            body, position = decoder.raw_decode(text, position)
            index += 1
            if body is not None:
                documents.append(ParsedDocument(index, body))
            position = _skip_space(text, position)
    except ValueError:
        return None
    return documents


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def _yaml_documents(text: str) -> Iterator[ParsedDocument]:
    documents = yaml.load_all(text, Loader=ManifestLoader)
    index = 0
    while True:
        index += 1
        try:
            body = next(documents)
        except StopIteration:
            return
        except yaml.YAMLError as error:
            raise ManifestSyntaxError(index, _describe(error)) from error
        if body is not None:
            yield ParsedDocument(index, body)


def _describe(error: yaml.YAMLError) -> str:
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"invalid YAML: {error.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return f"invalid YAML: {error}"
