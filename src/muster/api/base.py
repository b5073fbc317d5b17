"""Shared building blocks of the API models: the Kubernetes spelling of fields,
object metadata and conditions.

Every model speaks camelCase on the wire (as upstream does) and snake_case in
Python; field docstrings become the schema descriptions that `kubectl explain`
shows, so they are written for users.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Self

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class KubeModel(BaseModel):
    """Base of every API model: camelCase aliases, unknown fields rejected.

    Unknown fields are errors rather than silently dropped so that a typo in a
    manifest (``minCont``) is caught offline, as `kubectl apply` does with strict
    field validation.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        use_attribute_docstrings=True,
        frozen=True,
    )

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> Self:
        """Parse a plain mapping as the API server or a YAML file holds it."""
        return cls.model_validate(manifest)

    def to_manifest(self) -> dict[str, Any]:
        """The plain mapping the API server expects (unset fields left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ObjectMeta(BaseModel):
    """Standard object metadata; only the fields Muster reads are typed.

    Everything else the API server adds (uid, managedFields, ...) is kept as is,
    so a round trip through the model never loses data.
    """

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", frozen=True
    )

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    generation: int | None = None


class Condition(KubeModel):
    """One aspect of the object's state, as `metav1.Condition` defines it."""

    type: str
    """Type of the condition, e.g. PodGroupScheduled."""

    status: Literal["True", "False", "Unknown"]
    """Status of the condition: True, False or Unknown."""

    observed_generation: int | None = Field(default=None, json_schema_extra={"format": "int64"})
    """The .metadata.generation the condition was set from."""

    last_transition_time: AwareDatetime
    """When the condition last changed from one status to another."""

    reason: str
    """A CamelCase word for the condition's last transition, e.g. Unschedulable."""

    message: str
    """A human readable explanation of the transition; empty when there is nothing to add."""


INT32: dict[str, Any] = {"format": "int32"}
"""Schema extra for fields that are int32 upstream (kubectl shows <integer>)."""
