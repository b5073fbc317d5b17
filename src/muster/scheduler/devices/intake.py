"""Dynamic Resource Allocation objects (`resource.k8s.io/v1`) turned into records.

ResourceSlices (a driver's devices, per node and pool), DeviceClasses (selectors),
ResourceClaims (requests, and the devices allocated in their status) and
ResourceClaimTemplates (the claim each pod gets from them), and a pod's claims as
its spec and status name them. What is not modelled is refused with why (the
engine then skips the object, and a pod needing it waits): constraints between
devices other than `matchAttribute`, admin access, and devices shared by several
claims (`allowMultipleAllocations`, counters of partitionable devices). Device
taints published in the slices are read, with the requests' tolerations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import ceil
from typing import Any

from muster.api.keys import shared
from muster.scheduler.devices.selectors import DeviceKind, Value
from muster.scheduler.objects.fields import IntakeError, integer_field, list_field, mapping_field
from muster.scheduler.objects.quantity import QuantityError, parse_quantity
from muster.scheduler.rules.taints import Taint, Toleration, taint_from, toleration_from

ALL = "All"
EXACT_COUNT = "ExactCount"
DeviceId = tuple[str, str, str]  # driver, pool, device


@dataclass(frozen=True, slots=True)
class Device:
    id: DeviceId
    kind: DeviceKind
    taints: tuple[Taint, ...] = ()  # a claim that does not tolerate them cannot have it


@dataclass(frozen=True, slots=True)
class SliceRecord:
    """One ResourceSlice: its pool's generation and size, where its devices are."""

    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node: str | None  # spec.nodeName; None: devices not local to one node (not modelled)
    devices: tuple[Device, ...]


@dataclass(frozen=True, slots=True)
class Request:
    """One request of `exactly` devices of a class; or, with `alternatives`, of the
    first of its subrequests (`firstAvailable`) that can be satisfied."""

    name: str
    class_name: str
    selectors: tuple[str, ...]
    all_devices: bool  # allocationMode All
    count: int  # ExactCount
    tolerations: tuple[Toleration, ...] = ()  # of device taints
    alternatives: tuple[Request, ...] = ()  # firstAvailable, in order of preference

    @property
    def options(self) -> tuple[Request, ...]:
        """What may satisfy it, in order: its subrequests, or itself."""
        return self.alternatives or (self,)


@dataclass(frozen=True, slots=True)
class Constraint:
    """`matchAttribute`: the devices of these requests (every request of the claim when
    none is named) all have the attribute, with one value."""

    requests: tuple[str, ...]
    attribute: str  # fully qualified: <domain>/<name>


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    """What a claim asks for: its requests, and the constraints between their devices."""

    requests: tuple[Request, ...]
    constraints: tuple[Constraint, ...] = ()


@dataclass(frozen=True, slots=True)
class ClaimRecord:
    namespace: str
    name: str
    requests: tuple[Request, ...]
    constraints: tuple[Constraint, ...]
    allocated: tuple[DeviceId, ...] | None  # status.allocation; None: not allocated
    owner: str | None = None  # the pod it was made for (its controller ownerReference)


@dataclass(frozen=True, slots=True)
class PodClaim:
    """One entry of a pod's spec.resourceClaims, resolved as the resourceclaim
    controller names it: the claim's name, or the template whose claim is not made
    yet. Neither: the controller decided the pod needs no claim for it."""

    name: str
    claim: str | None
    template: str | None
    shared: bool = False  # named in the spec (resourceClaimName): other pods may use it


def _selectors(raw: object, where: str) -> tuple[str, ...]:
    """The CEL expressions, unparsed: parsing one of the API server's 10 KiB takes
    cel-python up to a second, which intake (on the operator's event loop) must not
    spend; the judging process parses them, and one it cannot parse makes its claim
    wait with the selector named (`selector_cases`)."""
    expressions = []
    for item in list_field(raw, where):
        cel = mapping_field(mapping_field(item, f"{where}[]").get("cel"), f"{where}[].cel")
        expression = cel.get("expression")
        if not isinstance(expression, str):
            raise IntakeError(f"{where}[]: only CEL selectors are modelled")
        expressions.append(shared(expression))
    return tuple(expressions)


def class_from(obj: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """A DeviceClass: its name and its selectors."""
    name = str(mapping_field(obj.get("metadata"), "metadata").get("name") or "")
    spec = mapping_field(obj.get("spec"), "spec")
    return shared(name), _selectors(spec.get("selectors"), "spec.selectors")


def _attribute(raw: object, where: str) -> Value:
    value = mapping_field(raw, where)
    for field in ("int", "bool", "string", "version"):
        if field in value:
            found = value[field]
            if not isinstance(found, bool | int | str):
                raise IntakeError(f"{where}.{field} must be a scalar")
            return shared(found) if isinstance(found, str) else found
    raise IntakeError(f"{where} has no value")


def _capacity(raw: object, where: str) -> int:
    try:
        return ceil(parse_quantity(mapping_field(raw, where).get("value")))
    except QuantityError as error:
        raise IntakeError(f"{where}: {error}") from error


def _device(raw: object, driver: str, pool: str) -> Device:
    device = mapping_field(raw, "spec.devices[]")
    name = device.get("name")
    if not isinstance(name, str) or not name:
        raise IntakeError("spec.devices[].name must be set")
    if device.get("allowMultipleAllocations") or device.get("consumesCounters"):
        raise IntakeError(f"device {name}: devices shared by claims are not modelled")
    attributes = mapping_field(device.get("attributes"), "attributes")
    capacity = mapping_field(device.get("capacity"), "capacity")
    kind = DeviceKind(
        driver,
        tuple(sorted((shared(k), _attribute(v, f"attributes.{k}")) for k, v in attributes.items())),
        tuple(sorted((shared(k), _capacity(v, f"capacity.{k}")) for k, v in capacity.items())),
    )
    taints = list_field(device.get("taints"), "taints")
    return Device(
        (driver, pool, shared(name)),
        kind,
        tuple(taint_from(raw, "taints[]") for raw in taints),
    )


def slice_from(obj: Mapping[str, Any]) -> SliceRecord:
    name = str(mapping_field(obj.get("metadata"), "metadata").get("name") or "")
    spec = mapping_field(obj.get("spec"), "spec")
    driver = shared(spec.get("driver") or "")
    pool = mapping_field(spec.get("pool"), "spec.pool")
    pool_name = shared(pool.get("name") or "")
    node = spec.get("nodeName")
    return SliceRecord(
        name=name,
        driver=driver,
        pool=pool_name,
        generation=integer_field(pool.get("generation"), "spec.pool.generation") or 0,
        slice_count=integer_field(pool.get("resourceSliceCount"), "resourceSliceCount") or 1,
        node=shared(node) if isinstance(node, str) and node else None,
        devices=tuple(
            _device(raw, driver, pool_name) for raw in list_field(spec.get("devices"), "devices")
        ),
    )


def _request(raw: object) -> Request:
    request = mapping_field(raw, "spec.devices.requests[]")
    name = shared(str(request.get("name") or ""))
    alternatives = list_field(request.get("firstAvailable"), "firstAvailable")
    if alternatives:
        options = tuple(_exactly(mapping_field(item, "firstAvailable[]")) for item in alternatives)
        return Request(name, "", (), all_devices=False, count=0, alternatives=options)
    return _exactly(mapping_field(request.get("exactly"), "exactly"), name)


def _exactly(exactly: Mapping[str, Any], name: str | None = None) -> Request:
    """A request of `exactly` devices, or a subrequest (which names itself)."""
    name = name if name is not None else shared(str(exactly.get("name") or ""))
    if exactly.get("adminAccess"):
        raise IntakeError(f"request {name}: adminAccess is not modelled")
    mode = exactly.get("allocationMode") or EXACT_COUNT
    if mode not in (ALL, EXACT_COUNT):
        raise IntakeError(f"request {name}: allocationMode {mode} is not modelled")
    count = integer_field(exactly.get("count"), "exactly.count")
    return Request(
        name=name,
        class_name=shared(exactly.get("deviceClassName") or ""),
        selectors=_selectors(exactly.get("selectors"), "exactly.selectors"),
        all_devices=mode == ALL,
        count=1 if count is None else count,
        tolerations=tuple(
            toleration_from(raw, "exactly.tolerations[]")
            for raw in list_field(exactly.get("tolerations"), "exactly.tolerations")
        ),
    )


def _constraint(raw: object) -> Constraint:
    constraint = mapping_field(raw, "spec.devices.constraints[]")
    attribute = constraint.get("matchAttribute")
    if not isinstance(attribute, str) or not attribute or constraint.get("distinctAttribute"):
        raise IntakeError("spec.devices.constraints[]: only matchAttribute is modelled")
    names = list_field(constraint.get("requests"), "constraints[].requests")
    return Constraint(tuple(shared(name) for name in names), shared(attribute))


def spec_of(spec: Mapping[str, Any]) -> ClaimSpec:
    """A claim's spec (a ResourceClaim's, or a template's spec.spec)."""
    devices = mapping_field(spec.get("devices"), "spec.devices")
    return ClaimSpec(
        tuple(_request(raw) for raw in list_field(devices.get("requests"), "requests")),
        tuple(_constraint(raw) for raw in list_field(devices.get("constraints"), "constraints")),
    )


def _allocated(status: Mapping[str, Any]) -> tuple[DeviceId, ...] | None:
    allocation = status.get("allocation")
    if allocation is None:
        return None
    devices = mapping_field(mapping_field(allocation, "allocation").get("devices"), "devices")
    results = []
    for raw in list_field(devices.get("results"), "status.allocation.devices.results"):
        result = mapping_field(raw, "results[]")
        results.append(
            (shared(result.get("driver")), shared(result.get("pool")), shared(result.get("device")))
        )
    return tuple(results)


def claim_from(obj: Mapping[str, Any]) -> ClaimRecord:
    metadata = mapping_field(obj.get("metadata"), "metadata")
    status = mapping_field(obj.get("status"), "status")
    spec = spec_of(mapping_field(obj.get("spec"), "spec"))
    return ClaimRecord(
        namespace=shared(metadata.get("namespace") or "default"),
        name=shared(metadata.get("name") or ""),
        requests=spec.requests,
        constraints=spec.constraints,
        allocated=_allocated(status),
        owner=_owning_pod(metadata),
    )


def _owning_pod(metadata: Mapping[str, Any]) -> str | None:
    for raw in list_field(metadata.get("ownerReferences"), "metadata.ownerReferences"):
        owner = mapping_field(raw, "ownerReferences[]")
        if owner.get("kind") == "Pod" and owner.get("controller"):
            return shared(owner.get("name") or "")
    return None


def template_from(obj: Mapping[str, Any]) -> ClaimSpec:
    """A ResourceClaimTemplate: the spec of the claims made from it."""
    spec = mapping_field(obj.get("spec"), "spec")
    return spec_of(mapping_field(spec.get("spec"), "spec.spec"))


def pod_claims(spec: Mapping[str, Any], status: Mapping[str, Any]) -> tuple[PodClaim, ...]:
    """A pod's claims, each by its claim's name when known (the status tells the name
    the resourceclaim controller gave a template's claim), else by its template."""
    made: dict[str, str | None] = {}
    for raw in list_field(status.get("resourceClaimStatuses"), "status.resourceClaimStatuses"):
        entry = mapping_field(raw, "resourceClaimStatuses[]")
        name = entry.get("resourceClaimName")
        made[str(entry.get("name"))] = shared(name) if name else None
    claims = []
    for raw in list_field(spec.get("resourceClaims"), "spec.resourceClaims"):
        entry = mapping_field(raw, "spec.resourceClaims[]")
        name = shared(entry.get("name") or "")
        if entry.get("resourceClaimName"):
            claims.append(PodClaim(name, shared(entry["resourceClaimName"]), None, shared=True))
            continue
        template = entry.get("resourceClaimTemplateName")
        if name in made:
            if made[name] is not None:  # else the controller made none: none is needed
                claims.append(PodClaim(name, made[name], shared(template) if template else None))
        elif template:
            claims.append(PodClaim(name, None, shared(template)))
    return tuple(claims)
