"""The gang observer itself: its rules on made-up histories, and each of its checks
made to fire on the cluster by a partial gang, or a failure of its own, made on purpose.

`test_a_whole_gang_left_running_short_is_partial_once_the_grace_is_over` is the one
that fails when the fall check is taken out."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import pytest
from devtools.factories import NodePool
from devtools.kubectl import Kubectl
from devtools.waiting import wait_until

from tests.e2e.support.harness import GROUP_LABEL, install_crds
from tests.e2e.support.ledger import Fall, GangLedger, GangPolicy, Rise
from tests.e2e.support.observer import GangObserver, gang_of, observing

pytestmark = pytest.mark.e2e

GRACE = 2.0
V = TypeVar("V", Rise, Fall)


def ledger(min_counts: dict[str, int], single: tuple[str, ...] = ()) -> GangLedger:
    """Gangs of these minCounts (disrupted whole but for the `single` ones); any other
    group is not a gang."""

    def policy(gang: str) -> GangPolicy | None:
        if gang not in min_counts:
            return None
        return GangPolicy(min_counts[gang], disrupted_whole=gang not in single)

    return GangLedger(policy, grace=GRACE)


# ---- the rule ---------------------------------------------------------------------------


def test_a_gang_whose_pods_bind_within_the_grace_is_whole() -> None:
    gangs = ledger({"g": 3})
    for pod in ("a", "b", "c"):
        gangs.pod(pod, "g", None, at=0)
    gangs.pod("a", "g", "n1", at=10.0)
    gangs.pod("b", "g", "n2", at=10.5)
    gangs.pod("c", "g", "n3", at=11.9)
    assert gangs.violations(now=100) == []
    assert [rise.spread for rise in gangs.risen] == [pytest.approx(1.9)]


def test_a_member_bound_by_its_creator_starts_no_rise_but_counts_towards_the_gang() -> None:
    """A pod created with its node named is bound at once, whether or not the gang
    fits; the rise is judged from the first member Muster released."""
    gangs = ledger({"g": 3})
    gangs.pod("a", "g", "n1", at=0, bypassed=True)
    for pod in ("b", "c"):
        gangs.pod(pod, "g", None, at=1.0)
    gangs.pod("b", "g", "n2", at=30.0)
    gangs.pod("c", "g", "n2", at=31.0)
    assert gangs.violations(now=100) == []
    assert [rise.spread for rise in gangs.risen] == [pytest.approx(1.0)]


def test_a_gang_stuck_below_min_count_is_partial_once_the_grace_is_over() -> None:
    gangs = ledger({"g": 3})
    for pod in ("a", "b", "c"):
        gangs.pod(pod, "g", None, at=0)
    gangs.pod("a", "g", "n1", at=10.0)
    gangs.pod("b", "g", "n1", at=10.2)
    assert gangs.violations(now=11.9) == []
    assert gangs.undecided(now=11.0) == pytest.approx(1.0)
    [partial] = gangs.violations(now=12.1)
    text = partial.describe(GRACE)
    assert "partial gang g: 2 of minCount 3" in text
    assert "a on n1" in text and "b on n1" in text
    assert "members never bound meanwhile: c" in text


def test_a_gang_that_reaches_min_count_too_late_was_partial_meanwhile() -> None:
    gangs = ledger({"g": 2})
    gangs.pod("a", "g", "n1", at=0)
    gangs.pod("b", "g", "n1", at=5)
    [late] = gangs.violations(now=6)
    assert "reached minCount only after 5.00s" in late.describe(GRACE)


def whole(gangs: GangLedger, gang: str, size: int, at: float = 0.0) -> list[str]:
    pods = [f"{gang}-{index}" for index in range(size)]
    for pod in pods:
        gangs.pod(pod, gang, "n1", at=at)
    return pods


def test_a_whole_gang_left_running_short_is_partial_once_the_grace_is_over() -> None:
    gangs = ledger({"g": 3})
    whole(gangs, "g", 3)
    gangs.gone("g-0", at=10.0)
    assert gangs.violations(now=11.9) == []
    assert gangs.undecided(now=11.0) == pytest.approx(1.0)
    [partial] = gangs.violations(now=12.1)
    text = partial.describe(GRACE)
    assert "partial gang g: fell from whole to 2 of minCount 3" in text
    assert "still short, not taken down" in text
    assert "members at the lowest: g-1 on n1, g-2 on n1" in text
    assert gangs.falls == [partial]


def test_a_gang_taken_down_whole_within_the_grace_passes_through_every_count_blameless() -> None:
    gangs = ledger({"g": 3})
    whole(gangs, "g", 3)
    gangs.gone("g-0", at=50)
    gangs.gone("g-1", at=51)
    gangs.gone("g-2", at=51.5)
    assert gangs.violations(now=100) == []
    [fall] = gangs.falls
    assert (fall.lowest, fall.lasted(now=100), fall.restored) == (1, 1.5, False)
    # ...and, with no member standing, it is judged afresh when it rises again.
    gangs.pod("g-3", "g", "n2", at=80)
    assert len(gangs.violations(now=90)) == 1


def test_a_gang_whose_remaining_members_are_all_leaving_is_taken_down_already() -> None:
    gangs = ledger({"g": 3})
    pods = whole(gangs, "g", 3)
    for pod in pods:  # evicted or deleted: each one's deletion has begun
        gangs.pod(pod, "g", "n1", at=10, leaving=True)
    gangs.gone("g-0", at=40)  # ...but they take their time to go
    assert gangs.violations(now=100) == []
    assert [fall.lasted(now=100) for fall in gangs.falls] == [0]


def test_a_gang_taken_down_too_slowly_was_partial_meanwhile() -> None:
    gangs = ledger({"g": 2})
    whole(gangs, "g", 2)
    gangs.gone("g-0", at=10)
    gangs.gone("g-1", at=15)
    [slow] = gangs.violations(now=20)
    assert "taken down whole only after 5.00s" in slow.describe(GRACE)


def test_a_member_replaced_within_the_grace_keeps_the_gang_but_a_late_one_does_not() -> None:
    gangs = ledger({"quick": 2, "slow": 2})
    whole(gangs, "quick", 2)
    whole(gangs, "slow", 2)
    gangs.pod("quick-0", "quick", "n1", at=10, phase="Failed")
    gangs.pod("quick-2", "quick", "n2", at=11)
    gangs.pod("slow-0", "slow", "n1", at=10, phase="Failed")
    gangs.pod("slow-2", "slow", "n2", at=20)
    [late] = gangs.violations(now=30)
    assert "partial gang slow: fell from whole to 1 of minCount 2" in late.describe(GRACE)
    assert "slow-0 on n1 (Failed)" in late.describe(GRACE)
    assert "whole again only after 10.00s" in late.describe(GRACE)
    assert [(f.gang, f.restored) for f in gangs.falls] == [("quick", True), ("slow", True)]


def test_members_that_succeeded_still_count_so_a_gang_may_finish_one_pod_at_a_time() -> None:
    gangs = ledger({"g": 3})
    pods = whole(gangs, "g", 3)
    for at, pod in enumerate(pods, start=10):
        gangs.pod(pod, "g", "n1", at=at * 10.0, phase="Succeeded")
    assert gangs.violations(now=1000) == []
    assert gangs.falls == []


def test_a_gang_disrupted_one_pod_at_a_time_may_fall_without_being_taken_down() -> None:
    gangs = ledger({"g": 2}, single=("g",))
    whole(gangs, "g", 2)
    gangs.gone("g-0", at=10)
    assert gangs.violations(now=100) == []
    assert gangs.falls == []


def test_a_fall_is_judged_by_the_podgroup_as_it_is_when_the_fall_begins() -> None:
    min_counts = {"resized": 3, "deleted": 3}
    gangs = ledger(min_counts)
    whole(gangs, "resized", 3)
    whole(gangs, "deleted", 3)
    min_counts["resized"] = 2  # its Job was scaled down...
    gangs.gone("resized-0", at=10)  # ...and the pod it no longer needs went
    del min_counts["deleted"]  # its Job is being deleted: the PodGroup went first
    gangs.gone("deleted-0", at=10)
    assert gangs.violations(now=100) == []


def test_a_release_rolled_back_within_the_grace_is_not_partial_but_a_slow_one_is() -> None:
    gangs = ledger({"quick": 2, "slow": 2})
    gangs.pod("q", "quick", "n1", at=0)
    gangs.gone("q", at=1)
    gangs.pod("s", "slow", "n1", at=0)
    gangs.gone("s", at=30)
    [slow] = gangs.violations(now=100)
    assert "fell back to 0 bound after 30.00s" in slow.describe(GRACE)
    assert gangs.undone == [1]  # the quick one's, for the tests that cause it


def test_a_rise_undone_by_deleting_its_pods_is_undone_when_their_deletion_begins() -> None:
    gangs = ledger({"g": 2})
    gangs.pod("a", "g", "n1", at=0)
    gangs.pod("a", "g", "n1", at=1, leaving=True)
    gangs.gone("a", at=30)
    assert gangs.violations(now=100) == []
    assert gangs.undone == [1]


def test_pods_that_are_not_a_gang_are_not_judged() -> None:
    gangs = ledger({"one": 1})  # "basic" and "ghost" have no gang minCount
    gangs.pod("a", "basic", "n1", at=0)
    gangs.pod("b", "ghost", "n1", at=0)
    gangs.pod("c", "one", "n1", at=0)
    gangs.pod("d", None, "n1", at=0)
    assert gangs.violations(now=100) == []


def test_a_pod_that_joins_a_gang_by_its_label_counts_from_then() -> None:
    gangs = ledger({"g": 2})
    gangs.pod("a", None, "n1", at=0)
    gangs.pod("b", None, "n1", at=0)
    gangs.pod("a", "g", "n1", at=10)
    gangs.pod("b", "g", "n1", at=11)
    assert gangs.violations(now=100) == []


def test_a_pod_the_cluster_gang_schedules_is_in_its_native_gang_whatever_its_label() -> None:
    labelled = {"metadata": {"labels": {GROUP_LABEL: "train"}}, "spec": {}}
    native = {**labelled, "spec": {"schedulingGroup": {"podGroupName": "train-pg"}}}
    assert gang_of(labelled) == "train"
    assert gang_of(native) == "scheduling.k8s.io/train-pg"
    assert gang_of({"metadata": {}}) is None


# ---- on the cluster ---------------------------------------------------------------------


def bound_pod(name: str, pool: NodePool, node: str) -> dict[str, object]:
    """A pod on `node` from the start, with no group label yet.

    Bound at creation (`spec.nodeName`), so neither kube-scheduler nor the operator
    decides anything; it joins its gang later, when the test labels it.
    """
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "tolerations": [pool.toleration],
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }


def gangs_of_bound_pods(
    kubectl: Kubectl, namespace: str, pool: NodePool, sizes: dict[str, int], min_count: int
) -> tuple[str, dict[str, list[str]]]:
    """A node, a PodGroup of `min_count` per gang, and `sizes[gang]` pods bound to the node
    for each, none labelled yet."""
    install_crds(kubectl)
    node = pool.add(gpus=1)
    pods = {group: [f"{group}-{i}" for i in range(size)] for group, size in sizes.items()}
    for group in sizes:
        kubectl.apply(
            {
                "apiVersion": "scheduling.muster.dev/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": group},
                "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
            },
            namespace,
        )
        for name in pods[group]:
            kubectl.apply(bound_pod(name, pool, node), namespace)
    return node, pods


def join(kubectl: Kubectl, namespace: str, group: str, *pods: str) -> None:
    kubectl("label", "pod", "-n", namespace, *pods, f"{GROUP_LABEL}={group}")


def flagged(what: str) -> str:
    """The observer's report that fails the waiting test."""
    with pytest.raises(AssertionError) as caught:
        wait_until(what, lambda: False, timeout=60)
    message = str(caught.value)
    assert not message.startswith("timed out"), message
    return message


def the_one_violation(observer: GangObserver, kind: type[V], gang: str) -> V:
    """The observer's only verdict, of `kind` and on `gang`, with no error beside it."""
    [verdict] = observer.violations()
    assert isinstance(verdict, kind) and verdict.gang == gang, verdict
    assert not observer.errors
    return verdict


@pytest.mark.allow_partial_gangs("it makes one, to see the observer catch it")
def test_the_observer_flags_a_gang_bound_one_pod_at_a_time(
    kubeconfig: Path, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    node, pods = gangs_of_bound_pods(
        kubectl, namespace, pool, {"partial": 3, "whole": 3}, min_count=3
    )
    with observing(kubeconfig, namespace, grace=GRACE) as observer:
        # Three members join at once: whole within the grace.
        join(kubectl, namespace, "whole", *pods["whole"])
        # One member joins, bound, and the other two only later: partial meanwhile.
        first = pods["partial"][0]
        join(kubectl, namespace, "partial", first)
        message = flagged("the observer to flag the partial gang")
        join(kubectl, namespace, "partial", *pods["partial"][1:])
        # Its rise is long past the grace, so `settle` would not wait for the watch to
        # deliver these two labels: wait until the observer has seen the gang whole.
        wait_until(
            "the observer to see the partial gang reach minCount",
            lambda: the_one_violation(observer, Rise, "partial").reached is not None,
            timeout=30,
        )
        observer.settle()

    assert "partial gang partial: 1 of minCount 3" in message, message
    assert f"{first} on {node}" in message
    # The other two were not members yet: the gang had one pod, and it was bound.
    assert "members never bound meanwhile: none" in message
    rise = the_one_violation(observer, Rise, "partial")
    assert rise.reached is not None  # it did reach minCount, too late


@pytest.mark.allow_partial_gangs("it makes one, to see the observer catch it")
def test_the_observer_flags_a_whole_gang_left_running_short_but_not_one_taken_down(
    kubeconfig: Path, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    """Three whole gangs lose a member: `short` keeps the other two running, `down` is
    deleted whole, and `restored` gets a new member in its place."""
    node, pods = gangs_of_bound_pods(
        kubectl, namespace, pool, {"short": 3, "down": 3, "restored": 4}, min_count=3
    )
    spare = pods["restored"].pop()
    grace = 2 * GRACE  # room for two kubectl calls to restore a gang on a loaded machine
    with observing(kubeconfig, namespace, grace=grace) as observer:
        for group, members in pods.items():
            join(kubectl, namespace, group, *members)
        wait_until(
            "the three gangs to be whole",
            lambda: len(observer.ledger.risen) == 3,
        )
        kubectl("delete", "pod", "-n", namespace, "--wait=false", "short-0", *pods["down"])
        kubectl("delete", "pod", "-n", namespace, "--wait=false", "restored-0")
        join(kubectl, namespace, "restored", spare)
        message = flagged("the observer to flag the gang left short")
        observer.settle()

    assert "partial gang short: fell from whole to 2 of minCount 3" in message, message
    assert f"short-1 on {node}, short-2 on {node}" in message
    assert "still short, not taken down" in message
    the_one_violation(observer, Fall, "short")
    outcomes = {f.gang: (f.ended is not None, f.restored) for f in observer.ledger.falls}
    assert outcomes == {"short": (False, False), "down": (True, False), "restored": (True, True)}


# ---- what keeps the observer from seeing ------------------------------------------------

OBSERVER_USER = "gang-observer-under-test"
MUSTER = "scheduling.muster.dev"
PATIENCE = 2.0


def grant(kubectl: Kubectl, namespace: str, pods: list[str], podgroups: list[str]) -> None:
    """The observer's user may do `pods` verbs on pods and `podgroups` ones on PodGroups;
    returns once the API server says so."""
    rules = [
        {"apiGroups": [group], "resources": [resource], "verbs": verbs}
        for group, resource, verbs in (("", "pods", pods), (MUSTER, "podgroups", podgroups))
        if verbs
    ]
    rbac = "rbac.authorization.k8s.io"
    kubectl.apply(
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "Role",
            "metadata": {"name": "observer"},
            "rules": rules,
        },
        namespace,
    )
    kubectl.apply(
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "observer"},
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "observer"},
            "subjects": [{"kind": "User", "name": OBSERVER_USER}],
        },
        namespace,
    )
    expected = {("pods", verb): verb in pods for verb in ("list", "watch")} | {
        (f"podgroups.{MUSTER}", "get"): "get" in podgroups
    }

    def in_force() -> bool:
        return all(
            kubectl(
                "auth", "can-i", verb, resource, "-n", namespace, f"--as={OBSERVER_USER}",
                check=False,
            ).stdout.strip() == ("yes" if allowed else "no")
            for (resource, verb), allowed in expected.items()
        )  # fmt: skip

    wait_until(f"the observer's rights to be {expected}", in_force)


@pytest.fixture
def limited(kubectl: Kubectl, namespace: str) -> str:
    """The observer's user, with every right the observer needs in `namespace`."""
    install_crds(kubectl)
    grant(kubectl, namespace, ["list", "watch"], ["get"])
    return OBSERVER_USER


@pytest.mark.allow_partial_gangs("its own observer is the one made to fail")
@pytest.mark.parametrize(
    ("rights", "expired", "failing"),
    [
        (["list"], False, "watching pods"),  # the watch breaks, and may not be resumed
        (["watch"], True, "relisting pods"),  # its version expires; it may not relist
    ],
    ids=["watch", "relist"],
)
def test_the_observer_fails_the_test_when_its_watch_or_relist_keeps_failing(
    kubeconfig: Path,
    kubectl: Kubectl,
    namespace: str,
    limited: str,
    monkeypatch: pytest.MonkeyPatch,
    *,
    rights: list[str],
    expired: bool,
    failing: str,
) -> None:
    with observing(kubeconfig, namespace, patience=PATIENCE, user=limited) as observer:
        grant(kubectl, namespace, rights, ["get"])
        if expired:  # as when the API server answers 410 Gone: the watch must relist
            monkeypatch.setattr(observer, "_watch", lambda: False)
        observer.interrupt()
        message = flagged(f"the observer to report {failing} failing")
    assert f"the observer could not see: {failing} failed for 2s" in message
    assert "HTTP 403" in message
    assert observer.interruptions


@pytest.mark.allow_partial_gangs("its own observer is the one made to fail")
def test_the_observer_fails_the_test_when_a_gang_s_podgroup_is_unreadable(
    kubeconfig: Path, kubectl: Kubectl, namespace: str, pool: NodePool, limited: str
) -> None:
    _, pods = gangs_of_bound_pods(kubectl, namespace, pool, {"hidden": 2}, min_count=2)
    with observing(kubeconfig, namespace, patience=PATIENCE, user=limited):
        grant(kubectl, namespace, ["list", "watch"], [])
        join(kubectl, namespace, "hidden", *pods["hidden"])
        message = flagged("the observer to report the PodGroup it cannot read")
    assert "the observer could not see: PodGroup hidden unreadable for 2s" in message
    assert "HTTP 403" in message and "its pods were not judged" in message


@pytest.mark.allow_partial_gangs("its own observer is the one made to fail")
def test_the_observer_fails_the_test_when_its_watch_thread_ends(
    kubeconfig: Path,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    node = pool.add(gpus=1)
    with observing(kubeconfig, namespace) as observer:

        def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("a bug in the observer")

        monkeypatch.setattr(observer.ledger, "pod", broken)
        kubectl.apply(bound_pod("any", pool, node), namespace)
        message = flagged("the observer to report that its watch ended")
    assert "the observer could not see: the watch ended while the test ran" in message
    assert "RuntimeError: a bug in the observer" in message
