"""A Job stored without the native field its pods were gated for, as the engine's record.

Muster's Job webhook gates the pod template of a Job that carries `spec.scheduling`
and marks the template as gated for that field (`GATED_FOR_ANNOTATION`). The API
server runs mutating admission before it prepares the object for storage, and only
then does one without the `WorkloadWithJob` feature drop the field: the webhook saw
the field, the stored Job has none. Such a Job gets no PodGroup, and without the
engine letting them go (`let_go`) its pods would wait gated for ever.

The stored Job alone tells it: its template is marked, and it carries no opt-in
(neither the field nor the label, either of which makes its PodGroup). A template
gated by hand carries no mark, so its PodGroup is taken to be on its way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from muster.api.constants import GATED_FOR_ANNOTATION, GATED_FOR_FIELD, POD_GROUP_LABEL
from muster.api.keys import GroupKey, JobRef
from muster.api.optin import carries_opt_in


@dataclass(frozen=True, slots=True)
class DroppedField:
    """A Job whose pods wait for a PodGroup that nothing will make."""

    job: JobRef
    group: GroupKey  # the PodGroup its pods name (their membership label)


def gated_for_field(job: Mapping[str, Any]) -> bool:
    """Whether the Job's pod template was gated for the native field: the only Jobs
    that can ever have a record (a template never changes)."""
    annotations = _mapping(_template_metadata(job).get("annotations"))
    return annotations.get(GATED_FOR_ANNOTATION) == GATED_FOR_FIELD


def dropped_field(job: Mapping[str, Any]) -> DroppedField | None:
    """The record of a Job whose pod template was gated for a field it was stored
    without; None for every other Job (and for anything malformed: such a Job's pods
    are left as they are)."""
    if not gated_for_field(job) or carries_opt_in(job):
        return None
    metadata = _mapping(job.get("metadata"))
    group = _mapping(_template_metadata(job).get("labels")).get(POD_GROUP_LABEL)
    namespace, name, uid = (metadata.get(field) for field in ("namespace", "name", "uid"))
    if not all(isinstance(value, str) and value for value in (group, namespace, name, uid)):
        return None
    return DroppedField(
        JobRef(str(namespace), str(name), str(uid)), GroupKey(str(namespace), str(group))
    )


def _template_metadata(job: Mapping[str, Any]) -> Mapping[str, Any]:
    template = _mapping(_mapping(job.get("spec")).get("template"))
    return _mapping(template.get("metadata"))


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
