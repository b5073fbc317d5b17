"""The inter-pod judge itself, rule by rule, on hand-made clusters (see `interpod_checker`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from muster.api.constants import POD_GROUP_LABEL
from tests.unit.scheduler.builders import Obj, node, pod, taint
from tests.unit.scheduler.interpod_checker import (
    AFFINITY_NOT_MATCH,
    ANTI_AFFINITY_NOT_MATCH,
    EXISTING_ANTI_AFFINITY_NOT_MATCH,
    HOSTNAME,
    SPREAD_LABEL_MISSING,
    SPREAD_NOT_MATCH,
    find_order,
    interpod_problems,
    label_selector,
    merge_label_keys,
    selector_matches,
)

ZONE = "zone"


def host(name: str, zone: str | None = None, **labels: str) -> Obj:
    """A node carrying its hostname label, and a zone when given."""
    all_labels = {HOSTNAME: name, **labels}
    if zone is not None:
        all_labels[ZONE] = zone
    return node(name, labels=all_labels)


def namespace(name: str, **labels: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def term(key: str, selector: Obj | None, **extra: Any) -> Obj:
    raw: Obj = {"topologyKey": key, **extra}
    if selector is not None:
        raw["labelSelector"] = selector
    return raw


def apps(*values: str) -> Obj:
    return {"matchExpressions": [{"key": "app", "operator": "In", "values": list(values)}]}


def anti(*terms: Obj) -> Obj:
    return {
        "affinity": {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}
        }
    }


def affinity(*terms: Obj) -> Obj:
    return {
        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}
    }


def spread(selector: Obj | None, *, key: str = ZONE, max_skew: int = 1, **extra: Any) -> Obj:
    constraint: Obj = {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        **extra,
    }
    if selector is not None:
        constraint["labelSelector"] = selector
    return {"topologySpreadConstraints": [constraint]}


def placed(
    name: str,
    on: str,
    *,
    app: str | None = None,
    spec: Obj | None = None,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    phase: str | None = None,
    terminating: bool = False,
) -> Obj:
    all_labels = dict(labels or {})
    if app is not None:
        all_labels["app"] = app
    obj = pod(name, node_name=on, namespace=namespace, labels=all_labels, spec=spec, phase=phase)
    if terminating:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return obj


ZONED = [host("n1", "a"), host("n2", "a"), host("n3", "b")]
TWO_ZONES = [host("n1", "a"), host("n2", "b")]
HOST_ANTI = anti(term(HOSTNAME, apps("web")))
ZONE_ANTI = anti(term(ZONE, apps("web")))
ZONE_AFFINITY = affinity(term(ZONE, apps("web")))
SPREAD = spread(apps("web"))


@dataclass(frozen=True)
class Case:
    pods: list[Obj]  # judged in this order
    expected: list[tuple[str, str]] = field(default_factory=list)  # (pod, reason) refused
    nodes: list[Obj] = field(default_factory=lambda: ZONED)
    bound: list[Obj] = field(default_factory=list)  # taken as they are
    namespaces: list[Obj] = field(default_factory=list)


CASES = {
    # --- the incoming pod's anti-affinity
    "hostname anti-affinity refuses a second pod on the node": Case(
        [
            placed("w1", "n1", app="web", spec=HOST_ANTI),
            placed("w2", "n1", app="web", spec=HOST_ANTI),
        ],
        [("w2", ANTI_AFFINITY_NOT_MATCH), ("w2", EXISTING_ANTI_AFFINITY_NOT_MATCH)],
    ),
    "hostname anti-affinity lets pods share a zone": Case(
        [
            placed("w1", "n1", app="web", spec=HOST_ANTI),
            placed("w2", "n2", app="web", spec=HOST_ANTI),
        ],
    ),
    "zone anti-affinity refuses another node of the zone": Case(
        [
            placed("w1", "n1", app="web", spec=ZONE_ANTI),
            placed("w2", "n2", app="web", spec=ZONE_ANTI),
        ],
        [("w2", ANTI_AFFINITY_NOT_MATCH), ("w2", EXISTING_ANTI_AFFINITY_NOT_MATCH)],
    ),
    "zone anti-affinity lets pods go to another zone": Case(
        [
            placed("w1", "n1", app="web", spec=ZONE_ANTI),
            placed("w2", "n3", app="web", spec=ZONE_ANTI),
        ],
    ),
    "anti-affinity does not apply on a node without the key": Case(
        [
            placed("w1", "x1", app="web", spec=ZONE_ANTI),
            placed("w2", "x2", app="web", spec=ZONE_ANTI),
        ],
        nodes=[host("x1"), host("x2")],
    ),
    "a pod on a node without the key repels nobody": Case(
        [placed("w1", "x1", app="web"), placed("w2", "n1", app="web", spec=ZONE_ANTI)],
        nodes=[host("x1"), host("n1", "a")],
    ),
    "anti-affinity only against pods its selector matches": Case(
        [placed("d1", "n1", app="db"), placed("w1", "n1", app="web", spec=HOST_ANTI)],
    ),
    "a nil label selector matches no pod": Case(
        [
            placed("d1", "n1", app="db"),
            placed("w1", "n1", app="web", spec=anti(term(HOSTNAME, None))),
        ],
    ),
    "an empty label selector matches every pod of the namespace": Case(
        [
            placed("d1", "n1", app="db"),
            placed("w1", "n1", app="web", spec=anti(term(HOSTNAME, {}))),
        ],
        [("w1", ANTI_AFFINITY_NOT_MATCH)],
    ),
    # --- symmetry: existing pods' anti-affinity
    "an existing pod's hostname anti-affinity repels the incoming pod": Case(
        [placed("w1", "n1", app="web")],
        [("w1", EXISTING_ANTI_AFFINITY_NOT_MATCH)],
        bound=[placed("guard", "n1", app="guard", spec=HOST_ANTI)],
    ),
    "an existing pod's hostname anti-affinity leaves other nodes alone": Case(
        [placed("w1", "n2", app="web")], bound=[placed("guard", "n1", app="guard", spec=HOST_ANTI)]
    ),
    "an existing pod's zone anti-affinity repels the whole zone": Case(
        [placed("w1", "n2", app="web"), placed("w2", "n3", app="web")],
        [("w1", EXISTING_ANTI_AFFINITY_NOT_MATCH)],
        bound=[placed("guard", "n1", app="guard", spec=ZONE_ANTI)],
    ),
    "symmetry holds between planned pods too": Case(
        [placed("guard", "n1", app="guard", spec=ZONE_ANTI), placed("w1", "n2", app="web")],
        [("w1", EXISTING_ANTI_AFFINITY_NOT_MATCH)],
    ),
    "existing pods' required affinity is not symmetric": Case(
        [placed("w1", "n3", app="web")], bound=[placed("fan", "n1", app="fan", spec=ZONE_AFFINITY)]
    ),
    # --- namespaces
    "an existing term defaults to its own namespace": Case(
        [placed("w1", "n1", app="web")],
        bound=[placed("guard", "n1", namespace="other", spec=HOST_ANTI)],
    ),
    "an existing term may name the incoming pod's namespace": Case(
        [placed("w1", "n1", app="web")],
        [("w1", EXISTING_ANTI_AFFINITY_NOT_MATCH)],
        bound=[
            placed(
                "guard",
                "n1",
                namespace="other",
                spec=anti(term(HOSTNAME, apps("web"), namespaces=["default"])),
            )
        ],
    ),
    "an existing term's namespaceSelector is matched against the incoming namespace's labels": Case(
        [placed("w1", "n1", app="web")],
        [("w1", EXISTING_ANTI_AFFINITY_NOT_MATCH)],
        bound=[
            placed(
                "guard",
                "n1",
                namespace="other",
                spec=anti(
                    term(HOSTNAME, apps("web"), namespaceSelector={"matchLabels": {"team": "x"}})
                ),
            )
        ],
        namespaces=[namespace("default", team="x"), namespace("other")],
    ),
    "an existing term's namespaceSelector that the namespace does not match": Case(
        [placed("w1", "n1", app="web")],
        bound=[
            placed(
                "guard",
                "n1",
                namespace="other",
                spec=anti(
                    term(HOSTNAME, apps("web"), namespaceSelector={"matchLabels": {"team": "x"}})
                ),
            )
        ],
        namespaces=[namespace("default", team="y")],
    ),
    "an empty namespaceSelector selects every namespace": Case(
        [placed("w1", "n1", app="web")],
        [("w1", EXISTING_ANTI_AFFINITY_NOT_MATCH)],
        bound=[
            placed(
                "guard",
                "n1",
                namespace="other",
                spec=anti(term(HOSTNAME, apps("web"), namespaceSelector={})),
            )
        ],
    ),
    "the incoming term defaults to its own namespace": Case(
        [placed("w1", "n1", app="web", spec=HOST_ANTI)],
        bound=[placed("web-elsewhere", "n1", app="web", namespace="other")],
    ),
    "the incoming term may list namespaces": Case(
        [
            placed(
                "w1", "n1", app="web", spec=anti(term(HOSTNAME, apps("web"), namespaces=["other"]))
            )
        ],
        [("w1", ANTI_AFFINITY_NOT_MATCH)],
        bound=[placed("web-elsewhere", "n1", app="web", namespace="other")],
    ),
    "the incoming term's namespaceSelector selects labelled namespaces": Case(
        [
            placed(
                "w1",
                "n1",
                app="web",
                spec=anti(
                    term(HOSTNAME, apps("web"), namespaceSelector={"matchLabels": {"team": "x"}})
                ),
            )
        ],
        [("w1", ANTI_AFFINITY_NOT_MATCH)],
        bound=[placed("web-elsewhere", "n1", app="web", namespace="other")],
        namespaces=[namespace("other", team="x")],
    ),
    "without Namespace objects no namespace has labels": Case(
        [
            placed(
                "w1",
                "n1",
                app="web",
                spec=anti(
                    term(HOSTNAME, apps("web"), namespaceSelector={"matchLabels": {"team": "x"}})
                ),
            )
        ],
        bound=[placed("web-elsewhere", "n1", app="web", namespace="other")],
    ),
    "a namespace without labels matches DoesNotExist": Case(
        [
            placed(
                "w1",
                "n1",
                app="web",
                spec=anti(
                    term(
                        HOSTNAME,
                        apps("web"),
                        namespaceSelector={
                            "matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]
                        },
                    )
                ),
            )
        ],
        [("w1", ANTI_AFFINITY_NOT_MATCH)],
        bound=[placed("web-elsewhere", "n1", app="web", namespace="other")],
    ),
    # --- the incoming pod's affinity and the self-affinity rule
    "self-affinity lets the first pod land": Case(
        [placed("w1", "n1", app="web", spec=ZONE_AFFINITY)]
    ),
    "self-affinity still needs the topology key on the node": Case(
        [placed("w1", "x1", app="web", spec=ZONE_AFFINITY)],
        [("w1", AFFINITY_NOT_MATCH)],
        nodes=[host("x1")],
    ),
    "a first pod that does not match its own terms is refused": Case(
        [placed("d1", "n1", app="db", spec=ZONE_AFFINITY)], [("d1", AFFINITY_NOT_MATCH)]
    ),
    "the followers join the first pod's zone": Case(
        [
            placed("w1", "n1", app="web", spec=ZONE_AFFINITY),
            placed("w2", "n2", app="web", spec=ZONE_AFFINITY),
            placed("w3", "n3", app="web", spec=ZONE_AFFINITY),
        ],
        [("w3", AFFINITY_NOT_MATCH)],
    ),
    "a matching bound pod decides the zone": Case(
        [placed("w1", "n3", app="web", spec=ZONE_AFFINITY)],
        [("w1", AFFINITY_NOT_MATCH)],
        bound=[placed("old", "n1", app="web")],
    ),
    "a matching pod on a node without the key does not count, not even against self-affinity": Case(
        [placed("w1", "n3", app="web", spec=ZONE_AFFINITY)],
        nodes=[*ZONED, host("x1")],
        bound=[placed("old", "x1", app="web")],
    ),
    "a matching pod in another namespace does not count": Case(
        [placed("w1", "n3", app="web", spec=ZONE_AFFINITY)],
        bound=[placed("old", "n1", app="web", namespace="other")],
    ),
    "affinity to a pod of another app, which is absent, is refused": Case(
        [placed("w1", "n1", app="web", spec=affinity(term(ZONE, apps("db"))))],
        [("w1", AFFINITY_NOT_MATCH)],
    ),
    "affinity to a pod of another app, present in the zone": Case(
        [placed("w1", "n2", app="web", spec=affinity(term(ZONE, apps("db"))))],
        bound=[placed("db", "n1", app="db")],
    ),
    "every term needs a pod matching all terms, in each term's domain": Case(
        [
            placed(
                "w1",
                "n2",
                app="web",
                spec=affinity(term(ZONE, apps("web")), term(HOSTNAME, apps("web"))),
            )
        ],
        [("w1", AFFINITY_NOT_MATCH)],
        bound=[placed("old", "n1", app="web")],
    ),
    # --- which pods count
    "a Succeeded pod's anti-affinity is gone": Case(
        [placed("w1", "n1", app="web")],
        bound=[placed("guard", "n1", app="guard", spec=HOST_ANTI, phase="Succeeded")],
    ),
    "a terminating pod's anti-affinity still counts": Case(
        [placed("w1", "n1", app="web")],
        [("w1", EXISTING_ANTI_AFFINITY_NOT_MATCH)],
        bound=[placed("guard", "n1", app="guard", spec=HOST_ANTI, terminating=True)],
    ),
    "a terminating pod still counts for affinity": Case(
        [placed("w1", "n3", app="web", spec=ZONE_AFFINITY)],
        [("w1", AFFINITY_NOT_MATCH)],
        bound=[placed("old", "n1", app="web", terminating=True)],
    ),
    "a Failed pod counts for no affinity": Case(
        [placed("w1", "n3", app="web", spec=ZONE_AFFINITY)],
        bound=[placed("old", "n1", app="web", phase="Failed")],
    ),
    # --- topology spread
    "spread refuses a skew above maxSkew": Case(
        [placed("s1", "n1", app="web", spec=SPREAD), placed("s2", "n2", app="web", spec=SPREAD)],
        [("s2", SPREAD_NOT_MATCH)],
    ),
    "spread accepts an even placement": Case(
        [
            placed("s1", "n1", app="web", spec=SPREAD),
            placed("s2", "n3", app="web", spec=SPREAD),
            placed("s3", "n2", app="web", spec=SPREAD),
        ],
    ),
    "spread with maxSkew 2": Case(
        [
            placed("s1", "n1", app="web", spec=spread(apps("web"), max_skew=2)),
            placed("s2", "n2", app="web", spec=spread(apps("web"), max_skew=2)),
            placed("s3", "n1", app="web", spec=spread(apps("web"), max_skew=2)),
        ],
        [("s3", SPREAD_NOT_MATCH)],
    ),
    "spread counts bound pods of the namespace": Case(
        [placed("s1", "n1", app="web", spec=SPREAD)],
        [("s1", SPREAD_NOT_MATCH)],
        bound=[placed("old", "n2", app="web")],
    ),
    "spread ignores pods of other namespaces": Case(
        [placed("s1", "n1", app="web", spec=SPREAD)],
        bound=[placed("old", "n2", app="web", namespace="other")],
    ),
    "spread skips terminating pods": Case(
        [placed("s1", "n1", app="web", spec=SPREAD)],
        bound=[placed("old", "n2", app="web", terminating=True)],
    ),
    "spread counts pods that do not spread themselves": Case(
        [placed("plain", "n1", app="web"), placed("s1", "n2", app="web", spec=SPREAD)],
        [("s1", SPREAD_NOT_MATCH)],
    ),
    "a pod its own selector misses adds nothing to the skew": Case(
        [placed("s1", "n1", app="web", spec=SPREAD), placed("d1", "n2", app="db", spec=SPREAD)],
    ),
    "spread refuses a node without the key": Case(
        [placed("s1", "x1", app="web", spec=SPREAD)],
        [("s1", SPREAD_LABEL_MISSING)],
        nodes=[*ZONED, host("x1")],
    ),
    "a node without the key is no domain and its pods do not count": Case(
        [placed("s1", "n1", app="web", spec=SPREAD)],
        nodes=[*ZONED, host("x1")],
        bound=[placed("old", "x1", app="web"), placed("old2", "x1", app="web")],
    ),
    "a node lacking another constraint's key is no domain": Case(
        [
            placed(
                "s1",
                "n1",
                app="web",
                spec={
                    "topologySpreadConstraints": [
                        spread(apps("web"))["topologySpreadConstraints"][0],
                        spread(apps("web"), key="rack", max_skew=5)["topologySpreadConstraints"][0],
                    ]
                },
            ),
        ],
        nodes=[host("n1", "a", rack="r1"), host("n2", "b", rack="r2"), host("n3", "c")],
        bound=[placed("old", "n1", app="web"), placed("old2", "n2", app="web")],
    ),
    "an empty spread selector counts no pod": Case(
        [placed(f"s{i}", "n1", app="web", spec=spread({})) for i in range(3)]
    ),
    "a ScheduleAnyway constraint never filters": Case(
        [
            placed(
                f"s{i}",
                "n1",
                app="web",
                spec={
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": ZONE,
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": apps("web"),
                        }
                    ]
                },
            )
            for i in range(3)
        ]
    ),
    "minDomains above the domains there are: the global minimum is 0": Case(
        [
            placed("s1", "n1", app="web", spec=spread(apps("web"), minDomains=3)),
            placed("s2", "n2", app="web", spec=spread(apps("web"), minDomains=3)),
        ],
        [("s2", SPREAD_NOT_MATCH)],
        nodes=[host("n1", "a"), host("n2", "b")],
        bound=[placed("old", "n2", app="web")],
    ),
    "minDomains met: the real global minimum": Case(
        [
            placed("s1", "n1", app="web", spec=spread(apps("web"), minDomains=2)),
            placed("s2", "n2", app="web", spec=spread(apps("web"), minDomains=2)),
        ],
        nodes=[host("n1", "a"), host("n2", "b")],
        bound=[placed("old", "n2", app="web")],
    ),
    "nodeAffinityPolicy Honor leaves nodes the pod may not use out of the domains": Case(
        [
            placed(
                "s1",
                "n1",
                app="web",
                spec={**SPREAD, "nodeSelector": {"pool": "x"}},
            )
        ],
        nodes=[host("n1", "a", pool="x"), host("n2", "b", pool="y")],
        bound=[placed("old", "n1", app="web")],
    ),
    "nodeAffinityPolicy Honor with required node affinity": Case(
        [
            placed(
                "s1",
                "n1",
                app="web",
                spec={
                    **SPREAD,
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {"key": "pool", "operator": "In", "values": ["x"]}
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                },
            )
        ],
        nodes=[host("n1", "a", pool="x"), host("n2", "b", pool="y")],
        bound=[placed("old", "n1", app="web")],
    ),
    "nodeAffinityPolicy Ignore counts every node's domain": Case(
        [
            placed(
                "s1",
                "n1",
                app="web",
                spec={
                    **spread(apps("web"), nodeAffinityPolicy="Ignore"),
                    "nodeSelector": {"pool": "x"},
                },
            )
        ],
        [("s1", SPREAD_NOT_MATCH)],
        nodes=[host("n1", "a", pool="x"), host("n2", "b", pool="y")],
        bound=[placed("old", "n1", app="web")],
    ),
    "nodeTaintsPolicy Ignore (the default) counts tainted nodes' domains": Case(
        [placed("s1", "n1", app="web", spec=SPREAD)],
        [("s1", SPREAD_NOT_MATCH)],
        nodes=[host("n1", "a"), {**host("n2", "b"), "spec": {"taints": [taint("gpu")]}}],
        bound=[placed("old", "n1", app="web")],
    ),
    "nodeTaintsPolicy Honor leaves untolerated tainted nodes out": Case(
        [placed("s1", "n1", app="web", spec=spread(apps("web"), nodeTaintsPolicy="Honor"))],
        nodes=[host("n1", "a"), {**host("n2", "b"), "spec": {"taints": [taint("gpu")]}}],
        bound=[placed("old", "n1", app="web")],
    ),
    "nodeTaintsPolicy Honor keeps tolerated tainted nodes": Case(
        [
            placed(
                "s1",
                "n1",
                app="web",
                spec={
                    **spread(apps("web"), nodeTaintsPolicy="Honor"),
                    "tolerations": [{"key": "gpu", "operator": "Exists"}],
                },
            )
        ],
        [("s1", SPREAD_NOT_MATCH)],
        nodes=[host("n1", "a"), {**host("n2", "b"), "spec": {"taints": [taint("gpu")]}}],
        bound=[placed("old", "n1", app="web")],
    ),
    "nodeTaintsPolicy Honor ignores PreferNoSchedule taints": Case(
        [placed("s1", "n1", app="web", spec=spread(apps("web"), nodeTaintsPolicy="Honor"))],
        [("s1", SPREAD_NOT_MATCH)],
        nodes=[
            host("n1", "a"),
            {**host("n2", "b"), "spec": {"taints": [taint("gpu", effect="PreferNoSchedule")]}},
        ],
        bound=[placed("old", "n1", app="web")],
    ),
    # --- matchLabelKeys / mismatchLabelKeys
    "spread matchLabelKeys narrows the selector to the pod's value": Case(
        [
            placed(
                "s1",
                "n2",
                app="web",
                spec=spread(
                    {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                    matchLabelKeys=["app"],
                ),
            )
        ],
        nodes=TWO_ZONES,
        bound=[placed("db", "n2", app="db")],
    ),
    "spread without matchLabelKeys counts every app": Case(
        [
            placed(
                "s1",
                "n2",
                app="web",
                spec=spread({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
            )
        ],
        [("s1", SPREAD_NOT_MATCH)],
        nodes=TWO_ZONES,
        bound=[placed("db", "n2", app="db")],
    ),
    "spread matchLabelKeys turns an empty selector into one that counts": Case(
        [
            placed("s1", "n1", app="web", spec=spread({}, matchLabelKeys=["app"])),
            placed("s2", "n1", app="web", spec=spread({}, matchLabelKeys=["app"])),
        ],
        [("s2", SPREAD_NOT_MATCH)],
        nodes=TWO_ZONES,
    ),
    "anti-affinity matchLabelKeys repels only the same value": Case(
        [
            placed("a1", "n1", app="a", spec=anti(term(HOSTNAME, {}, matchLabelKeys=["app"]))),
            placed("b1", "n1", app="b", spec=anti(term(HOSTNAME, {}, matchLabelKeys=["app"]))),
            placed("a2", "n1", app="a", spec=anti(term(HOSTNAME, {}, matchLabelKeys=["app"]))),
        ],
        [("a2", ANTI_AFFINITY_NOT_MATCH), ("a2", EXISTING_ANTI_AFFINITY_NOT_MATCH)],
    ),
    "mismatchLabelKeys: a zone exclusive to one group": Case(
        [
            placed(
                f"{group}-{index}",
                on,
                labels={POD_GROUP_LABEL: group},
                spec=anti(
                    term(
                        ZONE,
                        {"matchExpressions": [{"key": POD_GROUP_LABEL, "operator": "Exists"}]},
                        mismatchLabelKeys=[POD_GROUP_LABEL],
                    )
                ),
            )
            for group, index, on in [
                ("g1", 0, "n1"),
                ("g1", 1, "n2"),
                ("g2", 0, "n2"),
                ("g2", 1, "n3"),
            ]
        ],
        [("g2-0", ANTI_AFFINITY_NOT_MATCH), ("g2-0", EXISTING_ANTI_AFFINITY_NOT_MATCH)],
    ),
    "affinity matchLabelKeys: follow the pods of the same value": Case(
        [
            placed(
                "w1",
                "n3",
                app="web",
                labels={"job": "j1"},
                spec=affinity(term(ZONE, apps("web"), matchLabelKeys=["job"])),
            )
        ],
        bound=[placed("other-job", "n1", app="web", labels={"job": "j2"})],
    ),
    "matchLabelKeys on a nil selector still matches nothing": Case(
        [placed("a1", "n1", app="a", spec=anti(term(HOSTNAME, None, matchLabelKeys=["app"])))],
        bound=[placed("a0", "n1", app="a")],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_rules(case: Case) -> None:
    problems = interpod_problems(case.nodes, case.namespaces, case.pods, bound=case.bound)
    refused = []
    for problem in problems:
        who, _, why = problem.partition(": ")
        refused.append((who.partition(" on ")[0], why.rpartition(" (")[0]))
    assert sorted(refused) == sorted(
        (f"default/{name}", reason) for name, reason in case.expected
    ), problems


def test_a_problem_names_pod_node_and_rule() -> None:
    problems = interpod_problems(
        ZONED,
        [],
        [
            placed("w1", "n1", app="web", spec=ZONE_ANTI),
            placed("w2", "n2", app="web", spec=ZONE_ANTI),
        ],
    )
    prefix = "default/w2 on n2: "
    assert problems == [
        f"{prefix}{ANTI_AFFINITY_NOT_MATCH} (default/w1 on n1 shares zone=a)",
        f"{prefix}{EXISTING_ANTI_AFFINITY_NOT_MATCH} (default/w1 on n1 repels it at zone=a)",
    ]


def test_every_pod_is_judged_in_turn_and_bound_pods_are_not() -> None:
    pods = [placed(f"w{i}", "n1", app="web", spec=HOST_ANTI) for i in range(3)]
    assert len(interpod_problems(ZONED, [], pods)) == 4  # w1 and w2, each for both rules
    assert len(interpod_problems(ZONED, [], pods[2:], bound=pods[:2])) == 2


def test_an_unknown_node_is_a_problem() -> None:
    assert interpod_problems(ZONED, [], [placed("w1", "n9")]) == ["default/w1 on n9: no such node"]


def test_terminal_pods_are_neither_judged_nor_counted() -> None:
    pods = [placed(f"w{i}", "n1", app="web", spec=HOST_ANTI, phase="Succeeded") for i in range(2)]
    assert interpod_problems(ZONED, [], pods) == []


# --- pinned pods (the node-name affinity Muster releases them with)


def test_a_pin_shrinks_a_spread_constraint_to_the_pinned_node() -> None:
    """Unpinned, zones a and b hold one pod each: skew 1. Pinned to n2, the only eligible
    node is n2, one domain, fewer than minDomains: global minimum 0, skew 2."""
    pods = [placed("s1", "n2", app="web", spec=spread(apps("web"), minDomains=2))]
    bound = [placed("old-a", "n2", app="web"), placed("old-b", "n3", app="web")]
    assert interpod_problems(ZONED, [], pods, bound=bound) == []
    (problem,) = interpod_problems(ZONED, [], pods, bound=bound, pinned=True)
    assert problem.startswith(f"default/s1 on n2: {SPREAD_NOT_MATCH} (zone=a: skew 2 > maxSkew 1")
    assert not find_order(ZONED, [], pods, bound=bound, pinned=True).ok


def test_a_pin_lets_through_what_the_zone_would_refuse() -> None:
    pods = [placed("s1", "n1", app="web", spec=SPREAD)]
    bound = [placed("old", "n2", app="web")]
    assert interpod_problems(ZONED, [], pods, bound=bound)
    assert interpod_problems(ZONED, [], pods, bound=bound, pinned=True) == []


# --- the order search


def names(pods: tuple[Obj, ...] | None) -> list[str]:
    assert pods is not None
    return [pod["metadata"]["name"] for pod in pods]


def test_spread_needs_an_order_and_one_is_found() -> None:
    pods = [
        placed(name, on, app="web", spec=SPREAD)
        for name, on in [("a1", "n1"), ("a2", "n2"), ("b1", "n3")]
    ]
    assert interpod_problems(ZONED, [], pods)
    search = find_order(ZONED, [], pods)
    assert search.ok and names(search.order) == ["a1", "b1", "a2"]
    assert interpod_problems(ZONED, [], list(search.order or ())) == []


def test_the_search_backs_up_from_a_greedy_dead_end() -> None:
    """Placing the plain pod first (greedy's pick) leaves the spreading pod no room."""
    plain, spreading = placed("plain", "n1", app="web"), placed("s1", "n2", app="web", spec=SPREAD)
    search = find_order(ZONED, [], [plain, spreading])
    assert search.ok and names(search.order) == ["s1", "plain"]


def test_no_order_passes_and_the_problems_say_why() -> None:
    pods = [placed(f"w{i}", "n1", app="web", spec=HOST_ANTI) for i in range(2)]
    search = find_order(ZONED, [], pods)
    assert not search.ok
    prefix = "no order passes; with 1 of 2 planned pods placed: default/w1 on n1: "
    assert search.problems == (
        f"{prefix}{ANTI_AFFINITY_NOT_MATCH} (default/w0 on n1 shares {HOSTNAME}=n1)",
        f"{prefix}{EXISTING_ANTI_AFFINITY_NOT_MATCH} (default/w0 on n1 repels it at {HOSTNAME}=n1)",
    )


def test_the_search_starts_from_the_bound_pods() -> None:
    guard = placed("guard", "n1", app="guard", spec=ZONE_ANTI)
    search = find_order(ZONED, [], [placed("w1", "n2", app="web")], bound=[guard])
    assert not search.ok and EXISTING_ANTI_AFFINITY_NOT_MATCH in search.problems[0]
    assert find_order(ZONED, [], [placed("w1", "n3", app="web")], bound=[guard]).ok


def test_self_affinity_passes_in_every_order() -> None:
    pods = [
        placed(f"w{i}", on, app="web", spec=ZONE_AFFINITY)
        for i, on in enumerate(["n2", "n1", "n2"])
    ]
    assert interpod_problems(ZONED, [], pods) == []
    assert find_order(ZONED, [], pods).ok


# --- label selectors


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        (None, {}, False),
        (None, {"app": "web"}, False),
        ({}, {}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "web"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
        ({"matchLabels": {"app": "web"}}, {}, False),
        (apps("web", "db"), {"app": "db"}, True),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, {}, True),
        (
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]},
            {"app": "web"},
            False,
        ),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {"app": ""}, True),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {}, True),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {"app": "x"}, False),
        ({"matchLabels": {"app": "web"}, **apps("db")}, {"app": "web"}, False),
    ],
)
def test_label_selectors(selector: Obj | None, labels: dict[str, str], matches: bool) -> None:
    assert selector_matches(label_selector(selector), labels) is matches


def test_label_keys_merge_as_the_api_server_does() -> None:
    merged = merge_label_keys(
        {"matchLabels": {"a": "1"}}, {"k": "v", "m": "w"}, match=["k", "absent"], mismatch=["m"]
    )
    assert merged == {
        "matchLabels": {"a": "1"},
        "matchExpressions": [
            {"key": "k", "operator": "In", "values": ["v"]},
            {"key": "m", "operator": "NotIn", "values": ["w"]},
        ],
    }
    assert merge_label_keys(None, {"k": "v"}, match=["k"]) is None


def test_invalid_selectors_are_refused() -> None:
    with pytest.raises(ValueError):
        label_selector({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})
    with pytest.raises(ValueError):
        label_selector({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})
