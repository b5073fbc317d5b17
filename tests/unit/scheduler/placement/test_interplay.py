"""Pod affinity, anti-affinity and topology spread in whole cycles, rule by rule."""

from __future__ import annotations

from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import CycleResult
from tests.unit.scheduler.builders import Obj, cluster, node, pod, pod_group

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12)
HOSTNAME = "kubernetes.io/hostname"


def nodes(count: int, *, zones: int = 2, cpu: str = "8") -> list[Obj]:
    return [
        node(f"n{index}", cpu=cpu, labels={HOSTNAME: f"n{index}", "zone": f"z{index % zones}"})
        for index in range(count)
    ]


def term(app: str, key: str, **extra: object) -> Obj:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}


def anti(*terms: Obj) -> Obj:
    return {
        "affinity": {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}
        }
    }


def affine(*terms: Obj) -> Obj:
    return {
        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}
    }


def spread(app: str, key: str = "zone", **extra: object) -> Obj:
    constraint = {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": app}},
        **extra,
    }
    return {"topologySpreadConstraints": [constraint]}


def labelled(obj: Obj, **labels: str) -> Obj:
    obj["metadata"]["labels"].update(labels)
    return obj


def gang(
    name: str, count: int, spec: Obj, *, app: str, cpu: str = "1", **group: object
) -> list[Obj]:
    members = [
        labelled(pod(f"{name}-{index}", group=name, cpu=cpu, spec=spec), app=app)
        for index in range(count)
    ]
    return [pod_group(name, min_count=count, **group), *members]  # type: ignore[arg-type]


def run(*objects: Obj) -> CycleResult:
    return schedule(cluster(*objects), now=NOW, config=CONFIG)


def placements(result: CycleResult, group: str) -> dict[str, str]:
    for admission in result.admissions:
        if admission.group.name == group:
            return dict(admission.placements)
    raise AssertionError(f"{group} not admitted: {result.verdicts}")


def message(result: CycleResult, group: str) -> str:
    return next(v.message for k, v in result.verdicts.items() if k.name == group)


def test_one_worker_per_node_lands_on_distinct_nodes() -> None:
    result = run(*nodes(8), *gang("t4", 4, anti(term("t4", HOSTNAME)), app="t4"))
    assert len(set(placements(result, "t4").values())) == 4


def test_five_workers_one_per_node_on_four_nodes_wait_and_say_anti_affinity() -> None:
    result = run(*nodes(4), *gang("t5", 5, anti(term("t5", HOSTNAME)), app="t5"))
    assert not result.admissions
    text = message(result, "t5")
    assert text.startswith(
        "it does not fit even on an empty cluster: "
        "0/4 nodes can host a pod of the gang once 4 are placed: "
    )
    assert "4 node(s) didn't match pod anti-affinity rules" in text
    assert "at most 4 fit at once" in text


def test_zone_anti_affinity_puts_one_pod_per_zone() -> None:
    result = run(*nodes(6, zones=3), *gang("z", 3, anti(term("z", "zone")), app="z"))
    zones = {int(name[1:]) % 3 for name in placements(result, "z").values()}
    assert zones == {0, 1, 2}


def test_zone_spread_lands_two_and_two() -> None:
    result = run(*nodes(8), *gang("s", 4, spread("s"), app="s"))
    zones = [int(name[1:]) % 2 for name in placements(result, "s").values()]
    assert sorted(zones) == [0, 0, 1, 1]


def test_spread_counts_bound_pods_of_the_namespace_only() -> None:
    bound = [labelled(pod(f"old-{index}", node_name="n0", cpu="1"), app="s") for index in range(2)]
    elsewhere = labelled(pod("other", node_name="n1", namespace="other", cpu="1"), app="s")
    result = run(*nodes(4), *bound, elsewhere, *gang("s", 2, spread("s"), app="s"))
    zones = [int(name[1:]) % 2 for name in placements(result, "s").values()]
    assert zones == [1, 1]  # zone z0 already holds two; z1 catches up


def test_spread_refuses_a_node_without_the_key() -> None:
    unlabelled = node("bare", cpu="64", labels={HOSTNAME: "bare"})
    result = run(unlabelled, *gang("s", 2, spread("s"), app="s"))
    text = message(result, "s")
    assert "didn't match pod topology spread constraints (missing required label)" in text


def test_min_domains_caps_each_domain_at_max_skew() -> None:
    result = run(*nodes(4), *gang("s", 3, spread("s", minDomains=3), app="s"))
    assert not result.admissions
    assert "didn't match pod topology spread constraints" in message(result, "s")


def test_spread_node_affinity_policy_ignore_counts_excluded_nodes() -> None:
    selector = {"nodeSelector": {"zone": "z0"}}
    honored = run(*nodes(4), *gang("h", 2, {**spread("h"), **selector}, app="h"))
    assert set(placements(honored, "h").values()) <= {"n0", "n2"}
    ignored = run(
        *nodes(4),
        *gang("i", 2, {**spread("i", nodeAffinityPolicy="Ignore"), **selector}, app="i"),
    )
    assert not ignored.admissions  # z1 is a domain at 0: a second pod in z0 skews by 2


def test_existing_pod_anti_affinity_repels_the_gang() -> None:
    guard = labelled(
        pod("guard", node_name="n0", cpu="1", spec=anti(term("t", HOSTNAME))), app="guard"
    )
    result = run(*nodes(2), guard, *gang("t", 2, {}, app="t"))
    assert set(placements(result, "t").values()) == {"n1"}


def test_existing_pod_anti_affinity_is_reported() -> None:
    guard = labelled(
        pod("guard", node_name="n0", cpu="1", spec=anti(term("t", "zone"))), app="guard"
    )
    result = run(
        node("n0", labels={HOSTNAME: "n0", "zone": "a"}), guard, *gang("t", 1, {}, app="t")
    )
    assert "1 node(s) didn't satisfy existing pods anti-affinity rules" in message(result, "t")


def test_gang_anti_affinity_avoids_bound_pods() -> None:
    bound = labelled(pod("old", node_name="n0", cpu="1"), app="t")
    result = run(*nodes(3), bound, *gang("t", 2, anti(term("t", HOSTNAME)), app="t"))
    assert set(placements(result, "t").values()) == {"n1", "n2"}


def test_self_affine_gang_goes_to_one_zone_that_holds_it() -> None:
    small = [node(f"a{i}", cpu="1", labels={HOSTNAME: f"a{i}", "zone": "a"}) for i in range(2)]
    big = [node(f"b{i}", cpu="2", labels={HOSTNAME: f"b{i}", "zone": "b"}) for i in range(2)]
    result = run(*small, *big, *gang("c", 4, affine(term("c", "zone")), app="c"))
    assert set(placements(result, "c").values()) <= {"b0", "b1"}


def test_affinity_to_a_bound_pod_follows_it() -> None:
    leader = labelled(pod("leader", node_name="n3", cpu="1"), app="leader")
    result = run(*nodes(4), leader, *gang("w", 2, affine(term("leader", "zone")), app="w"))
    assert {int(name[1:]) % 2 for name in placements(result, "w").values()} == {1}


def test_affinity_with_nothing_to_join_and_no_self_match_waits() -> None:
    result = run(*nodes(2), *gang("w", 2, affine(term("leader", "zone")), app="w"))
    assert "2 node(s) didn't match pod affinity rules" in message(result, "w")


def test_anti_affinity_looks_only_at_its_namespaces() -> None:
    other = labelled(pod("x", node_name="n0", namespace="other", cpu="1"), app="t")
    own = run(*nodes(1), other, *gang("t", 1, anti(term("t", HOSTNAME)), app="t"))
    assert own.admissions
    listed = anti(term("t", HOSTNAME, namespaces=["other"]))
    refused = run(*nodes(1), other, *gang("u", 1, listed, app="t"))
    assert not refused.admissions


def test_namespace_selector_reads_namespace_labels() -> None:
    other = labelled(pod("x", node_name="n0", namespace="team-a", cpu="1"), app="t")
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"team": "a"}},
    }
    selected = anti(term("t", HOSTNAME, namespaceSelector={"matchLabels": {"team": "a"}}))
    state = cluster(*nodes(1), other, *gang("t", 1, selected, app="t"))
    assert schedule(state, now=NOW, config=CONFIG).admissions  # labels not known yet
    state.apply("Namespace", namespace)
    assert not schedule(state, now=NOW, config=CONFIG).admissions
    everywhere = anti(term("t", HOSTNAME, namespaceSelector={}))
    assert not run(*nodes(1), other, *gang("u", 1, everywhere, app="t")).admissions


def test_match_label_keys_narrow_the_selector_to_the_pods_own_value() -> None:
    old = labelled(pod("old", node_name="n0", cpu="1"), app="t", rev="1")
    keyed = anti(term("t", HOSTNAME, matchLabelKeys=["rev"]))
    members = [
        labelled(m, rev="2") if m["kind"] == "Pod" else m for m in gang("t", 2, keyed, app="t")
    ]
    result = run(*nodes(2), old, *members)
    assert sorted(placements(result, "t").values()) == ["n0", "n1"]  # rev 1 does not repel


def test_topology_constraint_and_one_per_node_together() -> None:
    racks = [
        node(f"{rack}{i}", labels={HOSTNAME: f"{rack}{i}", "rack": rack})
        for rack, count in (("a", 2), ("b", 3))
        for i in range(count)
    ]
    result = run(*racks, *gang("t", 3, anti(term("t", HOSTNAME)), app="t", topology_key="rack"))
    assert sorted(placements(result, "t").values()) == ["b0", "b1", "b2"]


def test_later_gangs_see_pods_placed_earlier_in_the_cycle() -> None:
    first = gang("a", 2, anti(term("t", HOSTNAME)), app="t", created="2026-01-01T00:00:00Z")
    second = gang("b", 2, anti(term("t", HOSTNAME)), app="t", created="2026-01-01T00:00:01Z")
    result = run(*nodes(3), *first, *second)
    assert placements(result, "a")
    assert "b" in {key.name for key in result.verdicts}


def test_scheduled_anyway_is_not_a_filter() -> None:
    soft = spread("s", whenUnsatisfiable="ScheduleAnyway")
    result = run(node("only", labels={HOSTNAME: "only"}), *gang("s", 3, soft, app="s"))
    assert len(placements(result, "s")) == 3


def volume(name: str, zone: str | None) -> Obj:
    spec: Obj = {"capacity": {"storage": "10Gi"}}
    if zone is not None:
        requirement = {"key": "zone", "operator": "In", "values": [zone]}
        spec["nodeAffinity"] = {
            "required": {"nodeSelectorTerms": [{"matchExpressions": [requirement]}]}
        }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": spec,
    }


def claim(name: str, volume_name: str | None) -> Obj:
    spec: Obj = {"volumeName": volume_name} if volume_name else {}
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def mounting(claim_name: str) -> Obj:
    return {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]}


def test_a_bound_zonal_volume_keeps_its_pod_in_the_zone() -> None:
    state = cluster(*nodes(4), *gang("v", 2, mounting("data"), app="v"))
    state.apply("PersistentVolume", volume("pv-z1", "z1"))
    state.apply("PersistentVolumeClaim", claim("data", "pv-z1"))
    result = schedule(state, now=NOW, config=CONFIG)
    assert set(placements(result, "v").values()) <= {"n1", "n3"}


def test_volume_node_affinity_is_reported_in_kube_scheduler_words() -> None:
    state = cluster(*nodes(2), *gang("v", 1, mounting("data"), app="v"))
    state.apply("PersistentVolume", volume("pv-elsewhere", "z9"))
    state.apply("PersistentVolumeClaim", claim("data", "pv-elsewhere"))
    text = message(schedule(state, now=NOW, config=CONFIG), "v")
    assert "2 node(s) didn't match PersistentVolume's node affinity" in text


def test_a_claim_bound_to_a_missing_volume_refuses_every_node() -> None:
    state = cluster(*nodes(2), *gang("v", 1, mounting("data"), app="v"))
    state.apply("PersistentVolumeClaim", claim("data", "gone"))
    text = message(schedule(state, now=NOW, config=CONFIG), "v")
    assert "2 node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)" in text


def test_unbound_and_unknown_claims_leave_nodes_open() -> None:
    state = cluster(*nodes(2), *gang("v", 2, mounting("later"), app="v"))
    state.apply("PersistentVolumeClaim", claim("later", None))
    assert schedule(state, now=NOW, config=CONFIG).admissions
    assert run(*nodes(2), *gang("u", 2, mounting("unseen"), app="u")).admissions


def test_earlier_gangs_anti_affinity_repels_a_later_gang_it_selects() -> None:
    first = gang("a", 2, anti(term("web", HOSTNAME)), app="a", created="2026-01-01T00:00:00Z")
    second = gang("b", 2, {}, app="web", created="2026-01-01T00:00:01Z")
    result = run(*nodes(4), *first, *second)
    assert not set(placements(result, "a").values()) & set(placements(result, "b").values())


def test_earlier_gangs_unanchored_anti_affinity_repels_a_later_gang() -> None:
    exists = {
        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
        "topologyKey": HOSTNAME,
    }
    first = gang("a", 2, anti(exists), app="a", created="2026-01-01T00:00:00Z")
    second = gang("b", 2, {}, app="b", created="2026-01-01T00:00:01Z")
    result = run(*nodes(4), *first, *second)
    assert not set(placements(result, "a").values()) & set(placements(result, "b").values())


def test_affinity_follows_a_gang_placed_earlier_in_the_cycle() -> None:
    first = gang("a", 2, {}, app="a", created="2026-01-01T00:00:00Z", topology_key="zone")
    second = gang("b", 2, affine(term("a", "zone")), app="b", created="2026-01-01T00:00:01Z")
    result = run(*nodes(6, zones=3), *first, *second)
    zone_of = {f"n{index}": index % 3 for index in range(6)}
    zones = {
        zone_of[on] for on in [*placements(result, "a").values(), *placements(result, "b").values()]
    }
    assert len(zones) == 1
