"""Other schedulers' PodGroups, adopted: what Muster makes of them and of their pods.

Frameworks (KubeRay, the training-operator, the MPI Operator) ask for a gang by
creating a PodGroup of the coscheduling plugin (`scheduler-plugins`) or of Volcano
(`volcano`) and naming that scheduler in their pods. Adopted, such a PodGroup becomes
a Muster PodGroup of the same name that it owns (:func:`adopted_pod_group`), and its
pods become members of it at creation (:func:`adopted_pod_patch`): Muster's group
label, the gang gate, and the default scheduler in place of the adopted one.

Pure functions over plain mappings, shared by the operator and the webhook.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from muster.api.constants import API_VERSION, GROUP, POD_GROUP_KIND, POD_GROUP_LABEL
from muster.api.gates import has_gang_gate, with_gang_gate

ADOPTED_FROM_LABEL: Final = f"{GROUP}/adopted-from"
ADOPT_NAMESPACE_LABEL: Final = f"{GROUP}/adopt"
DEFAULT_SCHEDULER: Final = "default-scheduler"
DEFAULT_NAMESPACE_SELECTOR: Final = json.dumps({"matchLabels": {ADOPT_NAMESPACE_LABEL: "true"}})
DEFAULT_SCHEDULER_NAMES: Final = "volcano,scheduler-plugins-scheduler"


@dataclass(frozen=True, slots=True)
class AdoptedApi:
    """One PodGroup API Muster can adopt, and how its pods name their group."""

    name: str
    group: str
    version: str
    scheduler_name: str
    member_label: str | None = None
    member_annotation: str | None = None
    status_subresource: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def collection(self) -> str:
        """The API path of its PodGroups, in every namespace."""
        return f"/apis/{self.api_version}/podgroups"

    def group_of(self, pod: Mapping[str, Any]) -> str | None:
        """The name of the PodGroup this API's pod says it belongs to, if any."""
        metadata = pod.get("metadata") or {}
        if self.member_label is not None:
            found = (metadata.get("labels") or {}).get(self.member_label)
        else:
            found = (metadata.get("annotations") or {}).get(self.member_annotation or "")
        return found if isinstance(found, str) and found else None


SCHEDULER_PLUGINS: Final = AdoptedApi(
    name="scheduler-plugins",
    group="scheduling.x-k8s.io",
    version="v1alpha1",
    scheduler_name="scheduler-plugins-scheduler",
    member_label="scheduling.x-k8s.io/pod-group",
)
VOLCANO: Final = AdoptedApi(
    name="volcano",
    group="scheduling.volcano.sh",
    version="v1beta1",
    scheduler_name="volcano",
    member_annotation="scheduling.k8s.io/group-name",
    status_subresource=False,  # Volcano's CRD keeps status in the object itself
)
APIS: Final = {api.name: api for api in (SCHEDULER_PLUGINS, VOLCANO)}


def adopted_apis(text: str) -> tuple[AdoptedApi, ...]:
    """The APIs of `--adopt` (comma-separated names), in a stable order."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in APIS]
    if unknown:
        raise ValueError(
            f"--adopt: {', '.join(unknown)} not known; choose from {', '.join(sorted(APIS))}"
        )
    return tuple(api for name, api in APIS.items() if name in names)


@dataclass(frozen=True, slots=True)
class Adoption:
    """What `muster run --adopt` adopts: the APIs, in which namespaces (a
    `metav1.LabelSelector` over their labels), and the scheduler names whose pods are
    given the default scheduler."""

    apis: tuple[AdoptedApi, ...]
    scheduler_names: tuple[str, ...]
    namespace_selector: Mapping[str, Any] = field(default_factory=dict)


def adoption_from(adopt: str, scheduler_names: str, namespace_selector: str) -> Adoption | None:
    """The adoption the three settings ask for; None when `adopt` names no API."""
    apis = adopted_apis(adopt)
    if not apis:
        return None
    try:
        selector = json.loads(namespace_selector)
    except ValueError as error:
        raise ValueError(f"--adopt-namespace-selector: not JSON: {error}") from error
    if not isinstance(selector, dict) or set(selector) - {"matchLabels", "matchExpressions"}:
        raise ValueError(
            "--adopt-namespace-selector: a label selector has matchLabels and matchExpressions"
        )
    names = tuple(part.strip() for part in scheduler_names.split(",") if part.strip())
    return Adoption(apis=apis, scheduler_names=names, namespace_selector=selector)


def api_of(obj: Mapping[str, Any]) -> AdoptedApi | None:
    """The adopted API an object (a foreign PodGroup) belongs to, by its apiVersion."""
    api_version = obj.get("apiVersion")
    return next((api for api in APIS.values() if api.api_version == api_version), None)


def min_member(pod_group: Mapping[str, Any]) -> int:
    """The gang size the adopted PodGroup asks for; at least 1, as a gang must be."""
    value = (pod_group.get("spec") or {}).get("minMember")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def adopted_pod_group(foreign: Mapping[str, Any], api: AdoptedApi) -> dict[str, Any]:
    """The Muster PodGroup an adopted PodGroup becomes: same name and namespace, a gang
    of its `minMember`, owned by it so the two go together.

    The owner reference does not block the owner's deletion: that would need the
    right to update the foreign API's finalizers, and nothing is gained by it.
    """
    metadata = foreign["metadata"]
    owner = {
        "apiVersion": api.api_version,
        "kind": foreign.get("kind", "PodGroup"),
        "name": metadata["name"],
        "controller": True,
        "blockOwnerDeletion": False,
    }
    if "uid" in metadata:
        owner["uid"] = metadata["uid"]
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_member(foreign)}}}
    priority_class = (foreign.get("spec") or {}).get("priorityClassName")
    if isinstance(priority_class, str) and priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": API_VERSION,
        "kind": POD_GROUP_KIND,
        "metadata": {
            "name": metadata["name"],
            "namespace": metadata.get("namespace"),
            "labels": {ADOPTED_FROM_LABEL: api.name},
            "ownerReferences": [owner],
        },
        "spec": spec,
    }


def owned_by(pod_group: Mapping[str, Any], foreign: Mapping[str, Any]) -> bool:
    """Whether a Muster PodGroup is the one made for this adopted PodGroup."""
    uid = (foreign.get("metadata") or {}).get("uid")
    owners = (pod_group.get("metadata") or {}).get("ownerReferences") or []
    return any(owner.get("uid") == uid and owner.get("controller") for owner in owners)


def adopted_owner(pod_group: Mapping[str, Any]) -> tuple[AdoptedApi, str] | None:
    """The adopted API and name of the PodGroup a Muster PodGroup was made for, if any."""
    labels = (pod_group.get("metadata") or {}).get("labels") or {}
    api = APIS.get(str(labels.get(ADOPTED_FROM_LABEL, "")))
    if api is None:
        return None
    for owner in (pod_group.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller") and owner.get("apiVersion") == api.api_version:
            return api, str(owner.get("name", ""))
    return None


def adopted_pod_patch(
    pod: Mapping[str, Any], apis: Iterable[AdoptedApi], scheduler_names: Iterable[str]
) -> dict[str, Any] | None:
    """What a new pod of an adopted API gets: Muster's group label, the gang gate
    (unless it names its node: a bound pod may not be gated) and, when it names one of
    `scheduler_names`, the default scheduler. None for a pod of no adopted API, or one
    that has all of it already.

    Returned as the labels, gates and scheduler name to set (None: unchanged).
    """
    group = next((name for api in apis if (name := api.group_of(pod)) is not None), None)
    if group is None:
        return None
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    changes: dict[str, Any] = {}
    labels = metadata.get("labels") or {}
    if labels.get(POD_GROUP_LABEL) != group:
        changes["labels"] = {**labels, POD_GROUP_LABEL: group}
    gates = list(spec.get("schedulingGates") or [])
    if not spec.get("nodeName") and not has_gang_gate(gates):
        changes["schedulingGates"] = with_gang_gate(gates)
    if spec.get("schedulerName") in set(scheduler_names):
        changes["schedulerName"] = DEFAULT_SCHEDULER
    return changes or None
