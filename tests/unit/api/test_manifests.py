from __future__ import annotations

import json

import pytest

from muster.api.manifests import ManifestSyntaxError, parse_manifests


def bodies(text: str) -> list[tuple[int, object]]:
    return [(parsed.index, parsed.body) for parsed in parse_manifests(text)]


def test_yaml_timestamps_stay_strings() -> None:
    text = "metadata: {creationTimestamp: 2026-01-01T10:00:00Z}\n"
    assert bodies(text) == [(1, {"metadata": {"creationTimestamp": "2026-01-01T10:00:00Z"}})]


def test_empty_yaml_documents_keep_their_numbers() -> None:
    assert bodies("a: 1\n---\n---\nb: 2\n") == [(1, {"a": 1}), (3, {"b": 2})]


def test_a_kubectl_json_list_is_one_document() -> None:
    dump = {"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node"}]}
    assert bodies(json.dumps(dump, indent=4)) == [(1, dump)]


def test_a_stream_of_json_values_is_one_document_each() -> None:
    assert bodies('{"a": 1}\n\n{"b": 2} null [3]\n') == [(1, {"a": 1}), (2, {"b": 2}), (4, [3])]


def test_a_yaml_flow_mapping_is_read_as_yaml() -> None:
    assert bodies("{a: 1}\n---\nb: 2\n") == [(1, {"a": 1}), (2, {"b": 2})]


def test_json_constants_that_are_not_json_are_left_to_yaml() -> None:
    assert bodies('{"a": NaN}') == [(1, {"a": "NaN"})]


def test_broken_yaml_names_its_document_and_line() -> None:
    with pytest.raises(ManifestSyntaxError) as raised:
        list(parse_manifests("a: 1\n---\nb: [1,\n"))
    assert raised.value.index == 2
    assert "(line 4, column 1)" in str(raised.value)
