"""Who may see the operator's page: a bearer token, reviewed by the API server (pure).

The page shows every namespace's gangs, pods, nodes and events, so it answers only a
request that carries a token the API server accepts (a TokenReview,
`authentication.k8s.io/v1`) of a user the API server lets `get` PodGroups in every
namespace (a SubjectAccessReview, `authorization.k8s.io/v1`): one documented right,
`BOARD_RIGHT`, that a ClusterRole grants a team. This is what controller-runtime's
`filters.WithAuthenticationAndAuthorization` (metrics) and kube-rbac-proxy (with
`resourceAttributes`) do in front of a page: no anonymous user, the user and groups
of the TokenReview passed as they are to the SubjectAccessReview, 401 for no user and
403 for no right. The token is read as the API server's own `bearertoken`
authenticator reads it (k8s.io/apiserver `pkg/authentication/request/bearertoken`).

This module builds the two review bodies and decides from their answers; the
requests and the cache are `reviewer`'s, the HTTP answer `guards`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from muster.api.constants import GROUP, POD_GROUP_PLURAL
from muster.api.wire import JsonObject

AUTHENTICATION_API: Final = "authentication.k8s.io/v1"
AUTHORIZATION_API: Final = "authorization.k8s.io/v1"
# The right the whole board asks for: `get` on podgroups in every namespace (no
# namespace in the review's attributes).
BOARD_RIGHT: Final = {"verb": "get", "group": GROUP, "resource": POD_GROUP_PLURAL}
BOARD_RIGHT_WORDS: Final = f"get {POD_GROUP_PLURAL}.{GROUP} in all namespaces"

ALLOWED: Final = 200
UNAUTHENTICATED: Final = 401
FORBIDDEN: Final = 403


@dataclass(frozen=True, slots=True)
class User:
    """A user as the API server's TokenReview knows them: what the access review asks
    about."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The answer to one request: `status` (200, 401 or 403) and the words that say why;
    `user` once the token was accepted."""

    status: int
    reason: str
    user: str = ""

    @property
    def allowed(self) -> bool:
        return self.status == ALLOWED


NO_TOKEN = Verdict(
    UNAUTHENTICATED, "a bearer token is needed: send it as 'Authorization: Bearer TOKEN'"
)
TOKEN_REFUSED = Verdict(UNAUTHENTICATED, "the API server did not accept this token")


def bearer_token(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer TOKEN` header; None for no header, another
    scheme, or an empty token. As the API server reads it: the scheme in any case, one
    space, the token up to the next space."""
    if header is None:
        return None
    parts = header.strip().split(" ")
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def token_review(token: str) -> JsonObject:
    """The TokenReview that asks the API server whose token this is (its own audiences)."""
    return {"apiVersion": AUTHENTICATION_API, "kind": "TokenReview", "spec": {"token": token}}


def reviewed_user(answer: Mapping[str, Any]) -> User | None:
    """The user of an answered TokenReview; None unless it says `authenticated`."""
    status = answer.get("status")
    if not isinstance(status, Mapping) or status.get("authenticated") is not True:
        return None
    user = status.get("user")
    if not isinstance(user, Mapping) or not isinstance(user.get("username"), str):
        return None
    extra = user.get("extra")
    return User(
        name=user["username"],
        uid=str(user.get("uid") or ""),
        groups=tuple(str(group) for group in user.get("groups") or ()),
        extra={
            str(key): tuple(str(value) for value in values or ())
            for key, values in (extra.items() if isinstance(extra, Mapping) else ())
        },
    )


def access_review(user: User) -> JsonObject:
    """The SubjectAccessReview of `user` for the board's right (`BOARD_RIGHT`)."""
    spec: JsonObject = {"user": user.name, "resourceAttributes": dict(BOARD_RIGHT)}
    if user.uid:
        spec["uid"] = user.uid
    if user.groups:
        spec["groups"] = list(user.groups)
    if user.extra:
        spec["extra"] = {key: list(values) for key, values in user.extra.items()}
    return {"apiVersion": AUTHORIZATION_API, "kind": "SubjectAccessReview", "spec": spec}


def verdict(user: User | None, access: Mapping[str, Any] | None) -> Verdict:
    """The decision from the two reviews' answers: no user, 401; a user the access
    review did not allow (denied, or no authorizer had an opinion), 403; else 200."""
    if user is None:
        return TOKEN_REFUSED
    status = (access or {}).get("status")
    if isinstance(status, Mapping) and status.get("allowed") is True:
        return Verdict(ALLOWED, "allowed", user.name)
    return Verdict(
        FORBIDDEN,
        f"{user.name} may not {BOARD_RIGHT_WORDS}, which this page requires",
        user.name,
    )
