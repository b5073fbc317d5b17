"""An independent judge of inter-pod rules, written from kube-scheduler 1.37's source.

It answers one question: would kube-scheduler's Filter let these pods land where they
were placed? Two plugins are modelled, with their default feature gates:

- InterPodAffinity (`plugins/interpodaffinity/filtering.go`, the default path; the
  alpha `InterPodAffinityHostnameFastPath` gate is off): the incoming pod's required
  affinity and anti-affinity terms, and the required anti-affinity terms of the pods
  already placed (symmetry).
- PodTopologySpread (`plugins/podtopologyspread/{common,filtering}.go`): the
  incoming pod's `whenUnsatisfiable: DoNotSchedule` constraints. `ScheduleAnyway`
  only scores, and the cluster default constraints are all `ScheduleAnyway`, so
  neither filters.

Nothing here is shared with `muster.scheduler`: the point is a second, separate
reading of the same rules. Everything works on plain Kubernetes dicts.

Which pods count (as kube-scheduler's cache holds them):

- Pods in phase Succeeded or Failed do not exist for kube-scheduler (its pod informer
  filters them out, `scheduler.go: newPodInformer`): they count for nothing.
- Terminating pods (`metadata.deletionTimestamp` set) count for inter-pod affinity
  (their labels and their anti-affinity terms), but topology spread skips them
  (`common.go: countPodsMatchSelector`).
- Pods bound to a node that is not in `nodes` are not in any NodeInfo: they count
  for nothing.

`matchLabelKeys` / `mismatchLabelKeys` are merged into the term's or constraint's
selector with the owning pod's label values, as the API server does when the pod is
created (`registry/core/pod/strategy.go: applyLabelKeysToLabelSelector`): `In` for
match keys, `NotIn` for mismatch keys, only when the selector is set (a nil selector
matches nothing and stays so) and only for keys the pod carries. Merging pods that
the API server already merged changes nothing (a repeated requirement).

Namespaces: an incoming pod's `namespaceSelector` is unrolled against the namespaces
that exist (`plugin.go: mergeAffinityTermNamespacesIfNotEmpty`); here those are the
Namespace objects given plus every namespace a pod is in (taken to exist, without
labels unless a Namespace object says otherwise). An existing pod's term is matched
against the incoming pod's namespace labels (`AffinityTerm.Matches` in
`kube-scheduler/framework/types.go`).

Not modelled: `InPlacePodVerticalScaling` deferred resizes, nominated pods, and the
Gt/Lt toleration operators (alpha, off).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from muster.operator.execution.pods import pinned_terms
from muster.scheduler.state.intake import required_terms

Obj = dict[str, Any]

HOSTNAME = "kubernetes.io/hostname"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})

AFFINITY_NOT_MATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL_MISSING = SPREAD_NOT_MATCH + " (missing required label)"

# ---------------------------------------------------------------------------------
# Label selectors (k8s.io/apimachinery: metav1.LabelSelectorAsSelector, labels.Selector)
# ---------------------------------------------------------------------------------

Requirement = tuple[str, str, frozenset[str]]  # key, operator, values
Selector = tuple[Requirement, ...] | None  # None: matches nothing; (): everything


def label_selector(raw: Mapping[str, Any] | None) -> Selector:
    """`metav1.LabelSelectorAsSelector`: nil matches nothing, `{}` everything."""
    if raw is None:
        return None
    requirements: list[Requirement] = [
        (key, "In", frozenset([value])) for key, value in (raw.get("matchLabels") or {}).items()
    ]
    for expression in raw.get("matchExpressions") or []:
        operator = expression["operator"]
        values = frozenset(expression.get("values") or [])
        if operator in ("In", "NotIn") and not values:
            raise ValueError(f"{operator} needs values: {expression}")
        if operator in ("Exists", "DoesNotExist") and values:
            raise ValueError(f"{operator} takes no values: {expression}")
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"unknown label selector operator {operator!r}")
        requirements.append((expression["key"], operator, values))
    return tuple(requirements)


def _requirement_matches(requirement: Requirement, labels: Mapping[str, str]) -> bool:
    key, operator, values = requirement
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    return key not in labels  # DoesNotExist


def selector_matches(selector: Selector, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False
    return all(_requirement_matches(requirement, labels) for requirement in selector)


def merge_label_keys(
    raw: Mapping[str, Any] | None,
    pod_labels: Mapping[str, str],
    *,
    match: Iterable[str] = (),
    mismatch: Iterable[str] = (),
) -> Obj | None:
    """The selector as the API server stores it once match/mismatch keys are merged."""
    if raw is None:
        return None
    expressions = list(raw.get("matchExpressions") or [])
    for keys, operator in ((match, "In"), (mismatch, "NotIn")):
        for key in keys:
            if key in pod_labels:
                expressions.append({"key": key, "operator": operator, "values": [pod_labels[key]]})
    merged = dict(raw)
    if expressions:
        merged["matchExpressions"] = expressions
    return merged


# ---------------------------------------------------------------------------------
# Node affinity and taints, for the spread constraints' node inclusion policies
# ---------------------------------------------------------------------------------


def _node_requirement_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression["key"], expression["operator"]
    values = list(expression.get("values") or [])
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt"):
        if key not in labels or len(values) != 1:
            return False
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    raise ValueError(f"unknown node selector operator {operator!r}")


def _node_term_matches(term: Mapping[str, Any], node: Obj) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term selects no node
    labels = _labels(node)
    name_only = {"metadata.name": node["metadata"]["name"]}
    return all(_node_requirement_matches(e, labels) for e in expressions) and all(
        _node_requirement_matches(f, name_only) for f in fields
    )


def node_affinity_matches(pod: Obj, node: Obj) -> bool:
    """`nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)`: nodeSelector and required terms."""
    spec = pod.get("spec") or {}
    labels = _labels(node)
    if not all(labels.get(key) == value for key, value in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is None:
        return True
    return any(_node_term_matches(term, node) for term in required.get("nodeSelectorTerms") or [])


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    raise ValueError(f"unsupported toleration operator {operator!r}")


def taints_tolerated(pod: Obj, node: Obj) -> bool:
    """No NoSchedule/NoExecute taint of the node is left untolerated by the pod."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    return all(
        any(_tolerates(toleration, taint) for toleration in tolerations)
        for taint in (node.get("spec") or {}).get("taints") or []
        if taint.get("effect") in ("NoSchedule", "NoExecute")
    )


# ---------------------------------------------------------------------------------
# Pods, terms and constraints, parsed once
# ---------------------------------------------------------------------------------


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


@dataclass(frozen=True)
class Term:
    """`fwk.AffinityTerm`: which pods (namespace and labels) a term selects, and where."""

    namespaces: frozenset[str]
    namespace_selector: Selector
    selector: Selector
    topology_key: str

    def matches(
        self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str]
    ) -> bool:
        """`AffinityTerm.Matches`: namespace listed or selected, then the labels."""
        if namespace in self.namespaces or selector_matches(self.namespace_selector, ns_labels):
            return selector_matches(self.selector, labels)
        return False


def _term(raw: Mapping[str, Any], namespace: str, labels: Mapping[str, str]) -> Term:
    selector = merge_label_keys(
        raw.get("labelSelector"),
        labels,
        match=raw.get("matchLabelKeys") or (),
        mismatch=raw.get("mismatchLabelKeys") or (),
    )
    listed = list(raw.get("namespaces") or [])
    namespace_selector = raw.get("namespaceSelector")
    if not listed and namespace_selector is None:
        listed = [namespace]  # getNamespacesFromPodAffinityTerm
    return Term(
        frozenset(listed),
        label_selector(namespace_selector),
        label_selector(selector),
        raw["topologyKey"],
    )


@dataclass(frozen=True)
class Constraint:
    """A parsed `DoNotSchedule` topology spread constraint (`topologySpreadConstraint`)."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int
    honor_affinity: bool
    honor_taints: bool


def _constraint(raw: Mapping[str, Any], labels: Mapping[str, str]) -> Constraint:
    selector = merge_label_keys(
        raw.get("labelSelector"), labels, match=raw.get("matchLabelKeys") or ()
    )
    affinity_policy = raw.get("nodeAffinityPolicy") or "Honor"
    taints_policy = raw.get("nodeTaintsPolicy") or "Ignore"
    for policy in (affinity_policy, taints_policy):
        if policy not in ("Honor", "Ignore"):
            raise ValueError(f"unknown node inclusion policy {policy!r}")
    return Constraint(
        max_skew=int(raw["maxSkew"]),
        topology_key=raw["topologyKey"],
        selector=label_selector(selector),
        min_domains=int(raw.get("minDomains") or 1),
        honor_affinity=affinity_policy == "Honor",
        honor_taints=taints_policy == "Honor",
    )


@dataclass(frozen=True)
class PodInfo:
    """What the rules need of one pod."""

    obj: Obj
    name: str
    namespace: str
    labels: dict[str, str]
    node: str
    terminating: bool
    affinity: tuple[Term, ...]  # required pod affinity, as written (namespaces not unrolled)
    anti_affinity: tuple[Term, ...]
    constraints: tuple[Constraint, ...]  # DoNotSchedule only

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def pod_info(pod: Obj) -> PodInfo:
    metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    namespace = metadata.get("namespace") or "default"
    labels = _labels(pod)
    affinity = spec.get("affinity") or {}

    def required(kind: str) -> tuple[Term, ...]:
        raw = (affinity.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []
        return tuple(_term(term, namespace, labels) for term in raw)

    constraints = []
    for raw in spec.get("topologySpreadConstraints") or []:
        action = raw.get("whenUnsatisfiable")
        if action not in ("DoNotSchedule", "ScheduleAnyway"):
            raise ValueError(f"unknown whenUnsatisfiable {action!r}")
        if action == "DoNotSchedule":
            constraints.append(_constraint(raw, labels))
    return PodInfo(
        obj=pod,
        name=metadata["name"],
        namespace=namespace,
        labels=labels,
        node=spec.get("nodeName") or "",
        terminating=metadata.get("deletionTimestamp") is not None,
        affinity=required("podAffinity"),
        anti_affinity=required("podAntiAffinity"),
        constraints=tuple(constraints),
    )


def _visible(pod: Obj) -> bool:
    return ((pod.get("status") or {}).get("phase")) not in TERMINAL_PHASES


# ---------------------------------------------------------------------------------
# The filters
# ---------------------------------------------------------------------------------


class Judge:
    """The cluster's nodes and namespaces; judges one incoming pod against placed pods."""

    def __init__(
        self, nodes: Sequence[Obj], namespaces: Sequence[Obj], pods: Iterable[PodInfo]
    ) -> None:
        self.nodes = {node["metadata"]["name"]: node for node in nodes}
        self.node_labels = {name: _labels(node) for name, node in self.nodes.items()}
        self.namespace_labels: dict[str, dict[str, str]] = {}
        for pod in pods:
            self.namespace_labels.setdefault(pod.namespace, {})
        for namespace in namespaces:
            self.namespace_labels[namespace["metadata"]["name"]] = _labels(namespace)

    def incoming_term(self, term: Term) -> Term:
        """`mergeAffinityTermNamespacesIfNotEmpty`: unroll a set namespaceSelector."""
        if term.namespace_selector == ():  # empty selector: every namespace, kept as it is
            return term
        selected = {
            name
            for name, labels in self.namespace_labels.items()
            if selector_matches(term.namespace_selector, labels)
        }
        return Term(term.namespaces | selected, None, term.selector, term.topology_key)

    def problems(self, pod: PodInfo, existing: Sequence[PodInfo]) -> list[str]:
        """Why kube-scheduler's Filter refuses `pod` on `pod.node`, given `existing` pods."""
        if pod.node not in self.nodes:
            return [f"{pod} on {pod.node}: no such node"]
        on_nodes = [other for other in existing if other.node in self.nodes]
        found = self._affinity(pod, on_nodes) + self._spread(pod, on_nodes)
        return [f"{pod} on {pod.node}: {problem}" for problem in found]

    def _affinity(self, pod: PodInfo, existing: Sequence[PodInfo]) -> list[str]:
        labels = self.node_labels[pod.node]
        found: list[str] = []
        affinity = [self.incoming_term(term) for term in pod.affinity]
        anti_affinity = [self.incoming_term(term) for term in pod.anti_affinity]

        def matches(term: Term, other: PodInfo) -> bool:
            # the incoming pod's namespaces are unrolled: no namespace labels needed
            return term.matches(other.namespace, other.labels, {})

        if affinity:
            # pods matching ALL terms, counted per (key, value) of each term's key
            counts: dict[tuple[str, str], int] = {}
            for other in existing:
                if all(matches(term, other) for term in affinity):
                    where = self.node_labels[other.node]
                    for term in affinity:
                        if term.topology_key in where:
                            pair = (term.topology_key, where[term.topology_key])
                            counts[pair] = counts.get(pair, 0) + 1
            missing = [t.topology_key for t in affinity if t.topology_key not in labels]
            if missing:
                found.append(f"{AFFINITY_NOT_MATCH} (node lacks {', '.join(missing)})")
            elif not all(
                counts.get((t.topology_key, labels[t.topology_key]), 0) > 0 for t in affinity
            ):
                itself = all(matches(term, pod) for term in affinity)
                if counts or not itself:
                    why = (
                        "matching pods exist elsewhere"
                        if counts
                        else "no pod matches and the pod does not match its own terms"
                    )
                    found.append(f"{AFFINITY_NOT_MATCH} ({why})")
        for term in anti_affinity:
            if term.topology_key not in labels:
                continue
            value = labels[term.topology_key]
            for other in existing:
                if self.node_labels[other.node].get(term.topology_key) == value and matches(
                    term, other
                ):
                    found.append(
                        f"{ANTI_AFFINITY_NOT_MATCH} ({other} on {other.node} shares "
                        f"{term.topology_key}={value})"
                    )
                    break
        ns_labels = self.namespace_labels.get(pod.namespace, {})
        repelling = (
            (other, term.topology_key)
            for other in existing
            for term in other.anti_affinity
            if term.topology_key in self.node_labels[other.node]
            and labels.get(term.topology_key) == self.node_labels[other.node][term.topology_key]
            and term.matches(pod.namespace, pod.labels, ns_labels)
        )
        for other, key in repelling:
            found.append(
                f"{EXISTING_ANTI_AFFINITY_NOT_MATCH} ({other} on {other.node} "
                f"repels it at {key}={labels[key]})"
            )
            break  # one line per rule, as kube-scheduler gives one reason per plugin
        return found

    def _spread(self, pod: PodInfo, existing: Sequence[PodInfo]) -> list[str]:
        if not pod.constraints:
            return []
        keys = [constraint.topology_key for constraint in pod.constraints]
        labels = self.node_labels[pod.node]
        missing = [key for key in keys if key not in labels]
        if missing:
            return [f"{SPREAD_LABEL_MISSING} (node lacks {', '.join(missing)})"]
        found = []
        for constraint in pod.constraints:
            counts = self.spread_counts(pod, constraint, existing)
            minimum = min(counts.values()) if len(counts) >= constraint.min_domains else 0
            value = labels[constraint.topology_key]
            itself = int(selector_matches(constraint.selector, pod.labels))
            skew = counts.get(value, 0) + itself - minimum
            if skew > constraint.max_skew:
                found.append(
                    f"{SPREAD_NOT_MATCH} ({constraint.topology_key}={value}: skew {skew} > "
                    f"maxSkew {constraint.max_skew}; counts {dict(sorted(counts.items()))}, "
                    f"global minimum {minimum})"
                )
        return found

    def spread_counts(
        self, pod: PodInfo, constraint: Constraint, existing: Sequence[PodInfo]
    ) -> dict[str, int]:
        """`calPreFilterState`: matching pods per domain of the eligible nodes."""
        keys = [c.topology_key for c in pod.constraints]
        counts: dict[str, int] = {}
        eligible: set[str] = set()
        for name, node in self.nodes.items():
            labels = self.node_labels[name]
            if not all(key in labels for key in keys):
                continue
            if constraint.honor_affinity and not node_affinity_matches(pod.obj, node):
                continue
            if constraint.honor_taints and not taints_tolerated(pod.obj, node):
                continue
            eligible.add(name)
            counts.setdefault(labels[constraint.topology_key], 0)
        if constraint.selector == ():  # an empty selector counts no pod (countPodsMatchSelector)
            return counts
        for other in existing:
            if (
                other.node in eligible
                and not other.terminating
                and other.namespace == pod.namespace
                and selector_matches(constraint.selector, other.labels)
            ):
                counts[self.node_labels[other.node][constraint.topology_key]] += 1
        return counts


# ---------------------------------------------------------------------------------
# The API
# ---------------------------------------------------------------------------------


def pin(pod: Obj) -> Obj:
    """The pod as Muster releases it: its required node affinity narrowed to its node's name.

    kube-scheduler then judges the pod with that affinity, which matters to topology
    spread: with `nodeAffinityPolicy: Honor` (the default) only the pinned node is
    eligible, so the constraint sees one domain holding that node's pods alone.
    """
    spec = dict(pod.get("spec") or {})
    affinity = dict(spec.get("affinity") or {})
    node_affinity = dict(affinity.get("nodeAffinity") or {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": pinned_terms(spec.get("nodeName") or "", required_terms(spec) or ())
    }
    spec["affinity"] = {**affinity, "nodeAffinity": node_affinity}
    return {**pod, "spec": spec}


def _infos(pods: Iterable[Obj], *, pinned: bool = False) -> list[PodInfo]:
    infos = []
    for pod in pods:
        if not _visible(pod):
            continue
        info = pod_info(pin(pod) if pinned else pod)
        if not info.node:
            raise ValueError(f"{info} has no spec.nodeName")
        infos.append(info)
    return infos


def interpod_problems(
    nodes: Sequence[Obj],
    namespaces: Sequence[Obj],
    pods_in_order: Sequence[Obj],
    *,
    bound: Sequence[Obj] = (),
    pinned: bool = False,
) -> list[str]:
    """Replay `pods_in_order` (each with `spec.nodeName`) one by one, as kube-scheduler would.

    Each pod is judged against `bound` (pods already running, taken as they are and
    never judged) and the pods before it in `pods_in_order`. Returns one line per
    refusal, naming the pod, its node and the rule; empty when every pod passes.
    Pods in phase Succeeded or Failed are skipped, neither judged nor counted.
    With `pinned`, each judged pod carries the node-name pin of `pin`.
    """
    placed = _infos(bound)
    incoming = _infos(pods_in_order, pinned=pinned)
    judge = Judge(nodes, namespaces, [*placed, *incoming])
    problems: list[str] = []
    for pod in incoming:
        problems += judge.problems(pod, placed)
        placed.append(pod)
    return problems


@dataclass(frozen=True)
class OrderSearch:
    """The outcome of `find_order`: an order that passes, or why none does."""

    order: tuple[Obj, ...] | None  # the planned pods in an order that passes
    problems: tuple[str, ...]  # when none passes: each pod left at the deepest dead end

    @property
    def ok(self) -> bool:
        return self.order is not None


def find_order(
    nodes: Sequence[Obj],
    namespaces: Sequence[Obj],
    planned: Sequence[Obj],
    *,
    bound: Sequence[Obj] = (),
    pinned: bool = False,
) -> OrderSearch:
    """Whether SOME order of the `planned` pods passes `interpod_problems` after `bound`.

    What a pod is judged against depends only on the SET of pods placed before it,
    never on their order (every rule counts pods), so the search runs over subsets:
    it places any pod that passes now and goes on (greedy), and only where that runs
    into a dead end does it back up and try another pod, remembering every subset
    already known to lead nowhere. The answer is therefore exact, not a heuristic:
    with required affinity and anti-affinity alone the first greedy path always
    succeeds when any order does (both are order-independent), and for spread the
    backtracking covers what greedy alone might miss. 2^len(planned) subsets at most.
    `pinned` as for `interpod_problems`; the order returned holds the pods as given.
    """
    placed = _infos(bound)
    incoming = _infos(planned, pinned=pinned)
    if len(incoming) > 16:
        raise ValueError("too many planned pods for an exhaustive order search")
    judge = Judge(nodes, namespaces, [*placed, *incoming])
    dead: set[frozenset[int]] = set()
    deepest: tuple[int, frozenset[int]] = (-1, frozenset())

    def search(done: frozenset[int], order: list[int]) -> list[int] | None:
        nonlocal deepest
        if len(done) == len(incoming):
            return order
        existing = placed + [incoming[index] for index in order]
        for index, pod in enumerate(incoming):
            if index in done or frozenset(done | {index}) in dead:
                continue
            if not judge.problems(pod, existing):
                found = search(done | {index}, [*order, index])
                if found is not None:
                    return found
        dead.add(done)
        if len(done) > deepest[0]:
            deepest = (len(done), done)
        return None

    found = search(frozenset(), [])
    visible = [pod for pod in planned if _visible(pod)]
    if found is not None:
        return OrderSearch(tuple(visible[index] for index in found), ())
    done = deepest[1]
    existing = placed + [incoming[index] for index in sorted(done)]
    left = [pod for index, pod in enumerate(incoming) if index not in done]
    prefix = f"no order passes; with {len(done)} of {len(incoming)} planned pods placed: "
    problems = [prefix + problem for pod in left for problem in judge.problems(pod, existing)]
    return OrderSearch(None, tuple(problems))
