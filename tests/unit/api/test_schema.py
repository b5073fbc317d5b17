"""JSON Schema from pydantic rewritten as the structural schema the API server takes."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from muster.api.schema import structural_schema


class Inner(BaseModel):
    """An inner part,
    described over   two lines."""

    size: int


class Outer(BaseModel):
    inner: Inner
    maybe: Inner | None = Field(default=None, description="Its own words win.")
    count: int | str = 1
    names: list[str] = Field(default_factory=list)
    extra: dict[str, Inner] = Field(default_factory=dict)


class Mixed(BaseModel):
    value: int | list[int]


def test_references_are_inlined_and_nulls_titles_and_defaults_go() -> None:
    schema = structural_schema(Outer)
    assert "$defs" not in schema and "title" not in schema
    inner = schema["properties"]["inner"]
    assert inner == {
        "description": "An inner part, described over two lines.",
        "properties": {"size": {"type": "integer"}},
        "required": ["size"],
        "type": "object",
    }
    assert schema["properties"]["maybe"]["description"] == "Its own words win."
    assert schema["properties"]["maybe"]["type"] == "object"
    assert schema["properties"]["count"] == {"x-kubernetes-int-or-string": True}
    assert schema["properties"]["names"] == {"items": {"type": "string"}, "type": "array"}
    assert schema["properties"]["extra"]["additionalProperties"]["type"] == "object"


def test_keys_are_sorted_and_properties_keep_the_models_order() -> None:
    schema = structural_schema(Outer)
    assert list(schema) == sorted(schema)
    assert list(schema["properties"]) == ["inner", "maybe", "count", "names", "extra"]


def test_alternatives_of_different_shapes_have_no_structural_form() -> None:
    with pytest.raises(ValueError, match="no structural form"):
        structural_schema(Mixed)


def test_validations_of_a_reference_and_of_the_field_are_both_kept() -> None:
    rule: dict[str, Any] = {"x-kubernetes-validations": [{"rule": "a", "message": "A"}]}

    class Ruled(BaseModel):
        model_config = {"json_schema_extra": rule}
        size: int

    class Holder(BaseModel):
        part: Ruled = Field(
            json_schema_extra={"x-kubernetes-validations": [{"rule": "b", "message": "B"}]}
        )

    validations = structural_schema(Holder)["properties"]["part"]["x-kubernetes-validations"]
    assert [entry["rule"] for entry in validations] == ["a", "b"]
