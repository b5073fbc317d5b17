"""Manifests as text: multi-document YAML read the way the API server reads it.

Pure (text in, mappings out), so the CLI commands that read files share it and
tests need no files.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class ManifestLoader(yaml.SafeLoader):
    """Safe YAML where timestamps stay strings, as they are in API objects (so an
    RFC 3339 field validates as the string its schema says it is)."""


ManifestLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
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
    the first one that is not YAML, after yielding those before it."""
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
