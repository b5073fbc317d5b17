"""The token read as the API server reads it, the two review bodies, and the verdict."""

from __future__ import annotations

import pytest

from muster.operator.dashboard.access import (
    ALLOWED,
    FORBIDDEN,
    NO_TOKEN,
    TOKEN_REFUSED,
    UNAUTHENTICATED,
    User,
    access_review,
    bearer_token,
    reviewed_user,
    token_review,
    verdict,
)

ALICE = User("alice", uid="u-1", groups=("team-a", "system:authenticated"), extra={"k": ("v",)})


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc.def", "abc.def"),
        ("bearer abc", "abc"),
        ("BEARER abc", "abc"),
        ("  Bearer abc  ", "abc"),
        ("Bearer abc extra", "abc"),
        (None, None),
        ("", None),
        ("Bearer", None),
        ("Bearer ", None),
        ("Bearer  abc", None),  # two spaces: an empty token, as the API server reads it
        ("Basic YWxpY2U6cHc=", None),
        ("abc", None),
    ],
)
def test_a_bearer_token_is_read_as_the_api_server_reads_it(
    header: str | None, token: str | None
) -> None:
    assert bearer_token(header) == token


def test_the_token_review_asks_about_the_token_alone() -> None:
    assert token_review("abc") == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "abc"},
    }


def test_an_authenticated_review_gives_its_user_with_groups_and_extra() -> None:
    answer = {
        "status": {
            "authenticated": True,
            "user": {
                "username": "alice",
                "uid": "u-1",
                "groups": ["team-a", "system:authenticated"],
                "extra": {"k": ["v"]},
            },
        }
    }
    assert reviewed_user(answer) == ALICE


@pytest.mark.parametrize(
    "answer",
    [
        {},
        {"status": {}},
        {"status": {"authenticated": False, "error": "token expired"}},
        {"status": {"authenticated": "true", "user": {"username": "alice"}}},
        {"status": {"authenticated": True}},
        {"status": {"authenticated": True, "user": {"username": 7}}},
        {"status": "odd"},
    ],
)
def test_any_other_answer_gives_no_user(answer: dict[str, object]) -> None:
    assert reviewed_user(answer) is None


def test_the_access_review_asks_for_get_on_podgroups_in_every_namespace_as_that_user() -> None:
    assert access_review(ALICE) == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "alice",
            "uid": "u-1",
            "groups": ["team-a", "system:authenticated"],
            "extra": {"k": ["v"]},
            "resourceAttributes": {
                "verb": "get",
                "group": "scheduling.muster.dev",
                "resource": "podgroups",
            },
        },
    }
    assert "namespace" not in access_review(User("bob"))["spec"]["resourceAttributes"]


def test_no_user_is_401_an_allowed_one_200_and_any_other_403_naming_the_right() -> None:
    assert verdict(None, None) == TOKEN_REFUSED
    assert TOKEN_REFUSED.status == NO_TOKEN.status == UNAUTHENTICATED
    allowed = verdict(ALICE, {"status": {"allowed": True}})
    assert (allowed.status, allowed.user, allowed.allowed) == (ALLOWED, "alice", True)
    for answer in (
        {"status": {"allowed": False, "denied": True, "reason": "no"}},
        {"status": {"allowed": False}},  # no authorizer had an opinion
        {"status": {"allowed": "yes"}},
        {},
    ):
        refused = verdict(ALICE, answer)
        assert refused.status == FORBIDDEN and not refused.allowed
        assert refused.reason == (
            "alice may not get podgroups.scheduling.muster.dev in all namespaces, "
            "which this page requires"
        )
