"""Structural OpenAPI v3 schemas from the pydantic models.

The API server accepts only *structural* schemas: every node typed, no ``$ref``,
no ``anyOf`` alternatives of different shapes, no ``additionalProperties: false``.
pydantic emits JSON Schema with all of those, so this module rewrites it:
references are inlined, optional fields lose their ``null`` alternative, an
``int | str`` field becomes ``x-kubernetes-int-or-string``, titles go, and
descriptions are joined into single paragraphs for `kubectl explain`. Keys are
sorted (properties keep the models' order), so the output is stable.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

# Keys of a pydantic node that carry no meaning for the API server.
_DROPPED_KEYS = frozenset({"title", "default"})
_WHITESPACE = re.compile(r"\s+")


def structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema rewritten as a structural OpenAPI v3 schema."""
    raw = model.model_json_schema(by_alias=True)
    definitions = raw.pop("$defs", {})
    return _rewrite(raw, definitions)


def _rewrite(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    node = _resolve(node, definitions)
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS:
            continue
        if key == "properties":
            if value:
                result[key] = {name: _rewrite(child, definitions) for name, child in value.items()}
        elif key == "items":
            result[key] = _rewrite(value, definitions)
        elif key == "additionalProperties":
            if isinstance(value, dict):
                result[key] = _rewrite(value, definitions)
        elif key == "description":
            result[key] = _WHITESPACE.sub(" ", value).strip()
        else:
            result[key] = value
    return dict(sorted(result.items()))


def _resolve(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """Inline a ``$ref`` and collapse an ``anyOf``; the node's own keys (its
    description, its validations) take precedence over the referenced ones."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        referenced = _resolve(definitions[name], definitions)
        own = {key: value for key, value in node.items() if key != "$ref"}
        return _merge(referenced, own)
    if "anyOf" in node:
        alternatives = [alt for alt in node["anyOf"] if alt.get("type") != "null"]
        own = {key: value for key, value in node.items() if key != "anyOf"}
        if len(alternatives) == 1:
            return _merge(_resolve(alternatives[0], definitions), own)
        if sorted(alt.get("type") for alt in alternatives) == ["integer", "string"]:
            return _merge({"x-kubernetes-int-or-string": True}, own)
        raise ValueError(f"no structural form for the alternatives {alternatives}")
    return node


def _merge(base: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in own.items():
        if key == "x-kubernetes-validations" and key in merged:
            merged[key] = [*merged[key], *value]
        else:
            merged[key] = value
    return merged
