"""The filters a node is judged by, once, in order: their names, reasons and what they refuse.

Modelled on kube-scheduler's framework (k8s.io/kubernetes v1.37.2,
pkg/scheduler/framework): its plugins are registered once
(`framework/plugins/registry.go`), enabled for the Filter extension point in one order
(`apis/config/v1/default_plugins.go`: NodeUnschedulable, TaintToleration, NodeAffinity,
NodePorts, NodeResourcesFit, the volume plugins, PodTopologySpread, InterPodAffinity,
DynamicResources), and the framework runs them in that order for each node, stopping
at the first that fails (`frameworkImpl.RunFilterPlugins`); each failure is a Status
with a reason in fixed words, and `FitError.Error` counts the reasons over the nodes
into the FailedScheduling message ("0/8 nodes are available: 3 Insufficient cpu, ...").

Muster judges a whole gang on arrays of nodes rather than one pod on one node, so a
filter belongs to a stage that says when its answer can change, and which part of the
engine computes it: the node alone (`state.predicates`, cached per rule set), what the
cycle has placed or the gang itself brings (`cycle.board`, per shape and cycle), where
the gang may go at all (its domain's key, the nodes closed for older gangs), free
capacity (`placement.fit`) and the rules between pods (`placement.interplay`). Each
of these iterates `FILTERS` for its stage, and the explanation (`placement.explain`)
counts the refused nodes in the same order, each node for the first filter that fails
it, as kube-scheduler does; resources are the exception kube-scheduler makes too: every
short resource of a node is counted. Within a stage the order is upstream's; across
stages it departs in one place: the volumes (VolumeBinding) are judged with the
shape's filter, before resources, since a node they refuse stays refused whatever is
free.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Stage(Enum):
    """When a filter's answer can change, which says where it is computed."""

    NODE = "the node alone"
    CYCLE = "the pods placed this cycle, and the gang's own volumes, claims and refusals"
    GANG = "where the gang may go at all"
    RESOURCES = "free capacity"
    INTER_POD = "the pods placed, the gang's own included"


UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
PORTS_IN_USE = "node(s) didn't have free ports for the requested pod ports"
PV_NOT_FOUND = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
REFUSED = "node(s) refused the gang's pods before (kube-scheduler)"
CLOSED_FOR_OLDER_GANG = "node(s) closed for a gang waiting longer"
TOO_MANY_PODS = "Too many pods"
INSUFFICIENT = "Insufficient "
SPREAD_LABEL_MISSING = (
    "node(s) didn't match pod topology spread constraints (missing required label)"
)
SPREAD_NOT_MATCHED = "node(s) didn't match pod topology spread constraints"
AFFINITY_NOT_MATCHED = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_NOT_MATCHED = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


def untolerated_taint(key: str, value: str) -> str:
    """TaintToleration's reason, naming the taint."""
    return f"node(s) had untolerated taint {{{key}: {value}}}"


def missing_label(key: str) -> str:
    """Why a node outside every domain of the gang's topology key is refused."""
    return f"node(s) had no {key} label"


def insufficient(resource: str) -> str:
    """NodeResourcesFit's reason for one short resource."""
    return TOO_MANY_PODS if resource == "pods" else f"{INSUFFICIENT}{resource}"


@dataclass(frozen=True, slots=True)
class Filter:
    """One filter: its name (kube-scheduler's plugin name where it models one), its
    stage, the reasons it gives in fixed words (empty: its words name what failed, as
    a taint or a claim), and what it refuses, in a sentence."""

    name: str
    stage: Stage
    reasons: tuple[str, ...]
    refuses: str


NODE_UNSCHEDULABLE = "NodeUnschedulable"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
UNKNOWN_CLAIMS = "DynamicResources"
NODE_PORTS = "NodePorts"
VOLUME_BINDING = "VolumeBinding"
REFUSED_BEFORE = "RefusedBefore"
TOPOLOGY_KEY = "TopologyKey"
CLOSED_FOR_OLDER = "ClosedForOlderGang"
NODE_RESOURCES_FIT = "NodeResourcesFit"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"

FILTERS = (
    Filter(
        NODE_UNSCHEDULABLE,
        Stage.NODE,
        (UNSCHEDULABLE,),
        "nodes marked unschedulable, unless the pod tolerates it",
    ),
    Filter(
        TAINT_TOLERATION,
        Stage.NODE,
        (),
        "nodes with a NoSchedule or NoExecute taint the pod does not tolerate",
    ),
    Filter(
        NODE_AFFINITY,
        Stage.NODE,
        (AFFINITY_MISMATCH,),
        "nodes outside the pod's nodeSelector and required node affinity",
    ),
    Filter(
        UNKNOWN_CLAIMS,
        Stage.CYCLE,
        (),
        "every node, for a pod whose device claims cannot be known yet",
    ),
    Filter(
        NODE_PORTS,
        Stage.CYCLE,
        (PORTS_IN_USE,),
        "nodes where a pod placed before or earlier this cycle holds a wanted host port",
    ),
    Filter(
        VOLUME_BINDING,
        Stage.CYCLE,
        (PV_NOT_FOUND, NODE_CONFLICT),
        "nodes the pod's bound volumes cannot be used from",
    ),
    Filter(
        REFUSED_BEFORE,
        Stage.CYCLE,
        (REFUSED,),
        "nodes kube-scheduler refused the gang's released pods on (Muster's own)",
    ),
    Filter(
        TOPOLOGY_KEY,
        Stage.GANG,
        (),
        "nodes without the gang's topology key (Muster's own)",
    ),
    Filter(
        CLOSED_FOR_OLDER,
        Stage.GANG,
        (CLOSED_FOR_OLDER_GANG,),
        "nodes closed for a gang that has waited longer (Muster's own)",
    ),
    Filter(
        NODE_RESOURCES_FIT,
        Stage.RESOURCES,
        (TOO_MANY_PODS,),
        "nodes short of any resource the pod asks for, each short resource counted",
    ),
    Filter(
        POD_TOPOLOGY_SPREAD,
        Stage.INTER_POD,
        (SPREAD_LABEL_MISSING, SPREAD_NOT_MATCHED),
        "nodes without a constraint's key, or whose domain would exceed maxSkew",
    ),
    Filter(
        INTER_POD_AFFINITY,
        Stage.INTER_POD,
        (AFFINITY_NOT_MATCHED, ANTI_AFFINITY_NOT_MATCHED, EXISTING_ANTI_AFFINITY),
        "nodes outside the domains the pod's affinity needs, or inside ones it or a"
        " placed pod's anti-affinity forbids",
    ),
)

STAGES = tuple(dict.fromkeys(entry.stage for entry in FILTERS))


def of_stage(stage: Stage) -> tuple[Filter, ...]:
    """The filters of one stage, in the order they run."""
    return tuple(entry for entry in FILTERS if entry.stage is stage)


def inter_pod_reasons() -> tuple[str, ...]:
    """The inter-pod filters' reasons, in order: the index of each is what
    `placement.interpod_filter` records per node."""
    return tuple(reason for entry in of_stage(Stage.INTER_POD) for reason in entry.reasons)
