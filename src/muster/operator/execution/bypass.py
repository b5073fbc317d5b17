"""The event for a member pod created bound to a node, past gang admission.

Such a pod (``spec.nodeName`` set at creation) is never gated: it is placed
already, and counts as a bound member of its gang. The user learns that it
bypassed gang admission from a Warning event on its PodGroup, where `kubectl
describe podgroup` shows it next to the gang's own story. The pod has no uid
yet when it is admitted, so the event goes on the PodGroup, looked up once:
the case is rare, and admission does not wait on it any longer than that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.api.constants import API_VERSION, POD_GROUP_KIND
from muster.api.gates import pod_group_name
from muster.api.wire import JsonObject
from muster.client.kube import Kube, KubeError
from muster.client.object_references import reference
from muster.client.paths import POD_GROUPS, namespaced
from muster.operator.execution.events import WARNING, EventRecorder

REASON = "BypassedGangAdmission"


class BypassReporter:
    """Records the event; a failure is logged by the recorder and otherwise ignored."""

    def __init__(self, kube: Kube, events: EventRecorder) -> None:
        self.kube = kube
        self.events = events

    async def __call__(self, pod: Mapping[str, Any]) -> None:
        metadata = pod.get("metadata") or {}
        namespace = str(metadata.get("namespace", ""))
        group = pod_group_name(pod) or ""
        node = (pod.get("spec") or {}).get("nodeName")
        name = metadata.get("name") or metadata.get("generateName", "") + "…"
        message = (
            f"pod {name} was created bound to node {node} (spec.nodeName): it bypassed gang"
            " admission and counts as a bound member of the gang"
        )
        await self.events.record(await self._pod_group(namespace, group), WARNING, REASON, message)

    async def _pod_group(self, namespace: str, name: str) -> JsonObject:
        """A reference to the PodGroup, with its uid when it exists (for describe)."""
        path = namespaced(POD_GROUPS, namespace, name)
        try:
            return reference(await self.kube.request("GET", path))
        except (KubeError, OSError):
            return {
                "apiVersion": API_VERSION,
                "kind": POD_GROUP_KIND,
                "namespace": namespace,
                "name": name,
            }
