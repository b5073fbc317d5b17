"""Where the API server keeps each kind Muster reads and writes, spelled once.

The collections are those of every namespace (what the informers watch); `namespaced`
narrows one to a namespace, or to one object in it, so no caller builds a path of its
own.
"""

from __future__ import annotations

from muster.api import features
from muster.api.constants import API_VERSION, POD_GROUP_PLURAL, WORKLOAD_PLURAL

NODES = "/api/v1/nodes"
NAMESPACES = "/api/v1/namespaces"
CLAIMS = "/api/v1/persistentvolumeclaims"
VOLUMES = "/api/v1/persistentvolumes"
PODS = "/api/v1/pods"
EVENTS = "/api/v1/events"
SECRETS = "/api/v1/secrets"
LEASES = "/apis/coordination.k8s.io/v1/leases"
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
BUDGETS = "/apis/policy/v1/poddisruptionbudgets"
POD_GROUPS = f"/apis/{API_VERSION}/{POD_GROUP_PLURAL}"
WORKLOADS = f"/apis/{API_VERSION}/{WORKLOAD_PLURAL}"
JOBS = "/apis/batch/v1/jobs"
KUEUE_API = f"/apis/{features.KUEUE_API}"  # served only where Kueue is installed
KUEUE_TOPOLOGIES = f"{KUEUE_API}/topologies"
RESOURCE_API = f"/apis/{features.DEVICES_API}"  # Dynamic Resource Allocation, from 1.34 on
RESOURCE_SLICES = f"{RESOURCE_API}/resourceslices"
DEVICE_CLASSES = f"{RESOURCE_API}/deviceclasses"
RESOURCE_CLAIMS = f"{RESOURCE_API}/resourceclaims"
RESOURCE_CLAIM_TEMPLATES = f"{RESOURCE_API}/resourceclaimtemplates"
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def namespaced(collection: str, namespace: str, name: str = "") -> str:
    """The collection in one namespace (`.../namespaces/NS/plural`), or with `name`
    the path of one object in it."""
    prefix, plural = collection.rsplit("/", 1)
    path = f"{prefix}/namespaces/{namespace}/{plural}"
    return f"{path}/{name}" if name else path
