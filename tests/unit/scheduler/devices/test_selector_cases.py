"""The selector cases a claim needs judged, in kube-scheduler's order, and the wait
they leave it in: for a judgement, or over budget with the claim and the limit named."""

from __future__ import annotations

import pytest

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.devices import book as device_book
from muster.scheduler.devices.intake import PodClaim
from muster.scheduler.devices.selector_cases import NOT_JUDGED, UNCOMPILED
from muster.scheduler.devices.selector_cost import COST_LIMIT
from muster.scheduler.devices.selectors import Judgement, case_of
from muster.scheduler.state.state import ClusterState
from tests.unit.scheduler.builders import Obj, cluster, gang, node
from tests.unit.scheduler.device_builders import (
    DRIVER,
    claim,
    claim_template,
    device_class,
    from_template,
    nested_all,
    request,
    resource_slice,
)

NOW = 1_798_761_600.0
BODY = f'device.attributes["{DRIVER}"].index + a + b + c >= 0'
COSTLY = nested_all(BODY)
H100 = f'device.attributes["{DRIVER}"].product == "H100"'
KEPT = 16  # judgements kept, lowered so that a short stream outgrows them


def unjudged_state(*objects: Obj) -> ClusterState:
    """A state whose selectors nobody judged yet (the operator's process is behind)."""
    state = ClusterState()
    for obj in objects:
        assert state.apply(obj["kind"], obj).rejected is None
    return state


def test_a_claim_waits_for_its_selectors_to_be_judged_and_names_them() -> None:
    state = unjudged_state(
        node("n1"), device_class(), resource_slice("n1", 2), claim("c", request(selectors=(H100,)))
    )
    wanted = state.devices.unjudged()
    class_selector = f'device.driver == "{DRIVER}"'
    assert {expression for expression, _ in wanted} == {class_selector}  # the class's first
    why = state.devices.needs("default", "p", claims_of("c"))
    assert why == NOT_JUDGED.format(owner="resourceclaim default/c")


def test_a_request_is_judged_only_on_the_kinds_its_class_selects() -> None:
    state = unjudged_state(
        node("n1"),
        device_class("h100", H100),
        resource_slice("n1", 2),
        resource_slice("n1", 2, product="A100", name="other", pool="other"),
        claim("c", request(device_class_name="h100", selectors=(COSTLY,))),
    )
    state.devices.judge_in_place()
    judged = state.devices.judged
    costly_kinds = {kind for expression, kind in judged if expression == COSTLY}
    assert costly_kinds and all(dict(kind.attributes)["product"] == "H100" for kind in costly_kinds)


def test_a_claim_over_the_cost_limit_waits_with_the_claim_and_the_limit_named() -> None:
    state = cluster(
        node("n1"),
        device_class(),
        resource_slice("n1", 4),
        claim("c", request(selectors=(COSTLY,))),
    )
    why = state.devices.needs("default", "p", claims_of("c"))
    assert isinstance(why, str)
    assert why.startswith("resourceclaim default/c: selector #0: ")
    assert f"CEL cost limit of {COST_LIMIT} exceeded" in why
    over = [case for case, judgement in state.devices.judged.items() if judgement.stops]
    assert len(over) == 1  # once one kind is over budget, the claim waits: no other is judged


def test_a_class_over_its_time_budget_is_named_as_the_class() -> None:
    state = unjudged_state(
        node("n1"), device_class("slow", H100), resource_slice("n1", 1), claim("c", request())
    )
    state.devices.judge_in_place()
    slow_class = claim("d", request(device_class_name="slow"))
    state.apply("ResourceClaim", slow_class)
    (case,) = state.devices.unjudged()
    assert state.judge_selectors({case: Judgement.OVER_TIME})
    assert not state.judge_selectors({case: Judgement.SELECTS})  # a judgement stands
    why = state.devices.needs("default", "q", claims_of("d"))
    assert isinstance(why, str) and why.startswith("deviceclass slow: selector #0: ")
    assert "did not end within" in why


def test_a_costly_template_leaves_its_gang_waiting_and_another_gang_placed() -> None:
    state = cluster(
        node("n1"),
        node("n2"),
        device_class(),
        resource_slice("n1", 8),
        resource_slice("n2", 8),
        claim_template("costly", request(selectors=(COSTLY,))),
        claim_template("plain", request()),
        *gang("g", 2, spec=from_template("costly")),
        *gang("h", 2, spec=from_template("plain")),
    )
    result = schedule(state, now=NOW, config=EngineConfig())
    verdict = result.verdicts[GroupKey("default", "g")]
    assert str(verdict.reason) == "Unschedulable"
    assert "resourceclaimtemplate default/costly: selector #0" in verdict.message
    assert str(COST_LIMIT) in verdict.message
    (admission,) = result.admissions
    assert admission.group == GroupKey("default", "h")


def test_a_judgement_is_one_case_for_every_device_alike_in_what_it_reads() -> None:
    state = cluster(
        node("n1"),
        device_class("h100", H100),
        resource_slice("n1", 8),
        claim("c", request("x", device_class_name="h100")),
    )
    cases = [case for case in state.devices.judged if case[0] == H100]
    assert cases == [case_of(H100, state.devices.kinds()[0])]


def claims_of(name: str) -> tuple[PodClaim, ...]:
    """A pod's claims: one naming the claim in its spec, as intake reads it."""
    return (PodClaim("gpu", name, None, shared=True),)


def test_an_unchanged_claim_or_another_with_the_same_selectors_needs_no_judgement() -> None:
    """Judgements are kept per (expression, device attributes it reads): a claim seen
    again, or a template of another namespace asking the same, is never judged twice."""
    state = cluster(
        node("n1"), device_class(), resource_slice("n1", 4), claim("c", request(selectors=(H100,)))
    )
    judged = dict(state.devices.judged)
    seen_again = claim("c", request(selectors=(H100,)))
    seen_again["metadata"]["resourceVersion"] = "2"
    state.apply("ResourceClaim", seen_again)
    state.apply(
        "ResourceClaimTemplate", claim_template("t", request(selectors=(H100,)), namespace="b")
    )
    assert state.devices.unjudged() == []
    assert state.devices.judged == judged


def test_a_claim_whose_selector_cel_python_cannot_parse_waits_with_it_named() -> None:
    state = cluster(
        node("n1"),
        device_class(),
        resource_slice("n1", 1),
        claim("c", request(selectors=(H100, "device.driver =="))),
    )
    why = state.devices.needs("default", "p", claims_of("c"))
    assert why == UNCOMPILED.format(owner="resourceclaim default/c", index=1)


def test_judgements_of_expressions_no_claim_uses_are_forgotten_as_new_ones_come(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(device_book, "KEPT_JUDGEMENTS", KEPT)
    state = unjudged_state(
        node("n1"),
        device_class(),
        resource_slice("n1", 1),
        claim("kept", request(selectors=(H100,))),
    )
    state.devices.judge_in_place()
    for index in range(3 * KEPT):
        expression = f'device.attributes["{DRIVER}"].index >= {index}'
        state.apply("ResourceClaim", claim("passing", request(selectors=(expression,))))
        state.devices.judge_in_place()
        state.delete("ResourceClaim", "default", "passing")
    judged = state.devices.judged
    assert len(judged) <= 2 * KEPT + 1
    assert any(expression == H100 for expression, _ in judged)  # in use: kept
    assert state.devices.needs("default", "p", claims_of("kept")) != NOT_JUDGED.format(
        owner="resourceclaim default/kept"
    )
