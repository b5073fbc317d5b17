"""What of Muster a cluster can offer, from what its API server serves.

Muster runs on every Kubernetes version it is tested on (`SUPPORTED_KUBE_VERSIONS` in
hack/versions.env, docs/versions.md); some of what it offers needs an API that only
some clusters serve. The operator asks once, at start
(:func:`muster.client.discovery.served_features`), says in one log line which
features are off and why (:meth:`ServedFeatures.summary`), and refuses a request
that needs an API that is off with the same reason, naming the field that asks for
it (:meth:`ServedFeatures.claim_problems`), instead of failing, or holding a gang
for what the cluster can never give it.

The versions are upstream's: `resource.k8s.io/v1` is served from Kubernetes 1.34 on,
enabled by default (`stableAPIGroupVersionsEnabledByDefault` in
pkg/controlplane/instance.go of v1.34.4); v1.32.13 has only `v1beta1`, in
`betaAPIGroupVersionsDisabledByDefault`, and drops a pod's `resourceClaims` while its
DynamicResourceAllocation gate is off (pkg/api/pod's `dropDisabledFields`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from muster.api.problems import Problem, join_path

DEVICES_API = "resource.k8s.io/v1"  # Dynamic Resource Allocation
DEVICES_FROM_MINOR = 34  # the first Kubernetes 1.x that serves DEVICES_API
KUEUE_API = "kueue.x-k8s.io/v1beta2"  # served only where Kueue is installed


def minor_of(version: str) -> int | None:
    """34 for "v1.34.4"; None when the API server did not say a 1.x version."""
    found = re.match(r"v?1\.(\d+)", version)
    return int(found.group(1)) if found else None


@dataclass(frozen=True, slots=True)
class ServedFeatures:
    """What the API server serves that some of Muster's features need.

    `kubernetes` is its version as `/version` says it (`gitVersion`, "" when unknown).
    The defaults are a cluster that serves everything, so that what was never asked
    (the engine offline, a webhook's unit test) refuses nothing.
    """

    kubernetes: str = ""
    devices: bool = True
    kueue: bool = True

    def devices_off(self) -> str | None:
        """Why Dynamic Resource Allocation is off here; None when it is on."""
        if self.devices:
            return None
        minor = minor_of(self.kubernetes)
        if minor is not None and minor < DEVICES_FROM_MINOR:
            why = f"Kubernetes {self.kubernetes} < 1.{DEVICES_FROM_MINOR}"
        else:
            why = f"turned off on this API server (Kubernetes {self.kubernetes or '?'})"
        return f"DRA off: {DEVICES_API} not served ({why})"

    def kueue_off(self) -> str | None:
        """Why Kueue's Topologies are not read; None when they are."""
        return None if self.kueue else f"Kueue topologies off: {KUEUE_API} not served"

    def off(self) -> list[str]:
        """Each feature that is off, with its reason."""
        return [reason for reason in (self.devices_off(), self.kueue_off()) if reason]

    def summary(self) -> str:
        """The one line the operator logs at start."""
        off = self.off()
        version = self.kubernetes or "version unknown"
        if not off:
            return f"Kubernetes {version}: every feature on"
        return f"Kubernetes {version}: " + "; ".join(off)

    def claim_problems(self, pod_spec: Mapping[str, Any], path: str) -> list[Problem]:
        """A pod spec's resource claims, refused where DRA is off: the API server would
        drop them as it stores the object (a field of a disabled feature), and the
        pods run without the devices they claim; `path` is the pod spec's field."""
        reason = self.devices_off()
        if reason is None or not pod_spec.get("resourceClaims"):
            return []
        return [
            Problem(
                join_path(path, "resourceClaims"),
                f"{reason}: this cluster cannot allocate the devices these claims ask for",
            )
        ]
