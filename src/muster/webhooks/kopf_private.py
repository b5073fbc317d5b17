"""The parts of kopf that kopf keeps private, imported here and nowhere else.

kopf's public face (`kopf/__init__.py`) has the handlers, settings and registry, but
not the pieces a webhook server of one's own is made of. Muster serves the admission
webhooks itself (`serving`, `server`: match conditions and a review size bound that
kopf's managed configurations and server lack), so it needs these; each is named
below with why. They can change in any kopf release, so `pyproject.toml` pins the
exact kopf version they were read at, and a test keeps every other module of the
project from importing `kopf._…`: moving to a new kopf means reading this one file
again.
"""

from __future__ import annotations

from collections.abc import Iterable

import kopf

# The API client's state for our own discovery rescans (`served_resources`): the
# credentials vault the scan reads through, its request errors, and the scan itself.
from kopf._cogs.clients import auth, errors, scanning

# Resources and selectors, the insights the admission engine routes by, and the
# vault of connection infos our own rescans log in with.
# A raw object body and the memo type: the signature of `recall_memo`, which
# `memories.AdmissionMemories` overrides so no memo outlives its request.
from kopf._cogs.structs import bodies, credentials, ephemera, references

# The request and response of a webhook handler call, as the server routes them.
from kopf._cogs.structs.reviews import Request, Response

# The admission engine: `serve_admission_request` answers a review through the
# registered handlers, `find_resource` routes it, and its two errors tell an unknown
# resource (served "not ready" while discovery is incomplete) from a handler's refusal.
from kopf._core.engines import admission

# Which kind of configuration (mutating or validating) a handler belongs in.
from kopf._core.intents.causes import WebhookType

# A registered webhook handler: its resource, operations, filters and id, which the
# configurations we build are made from.
from kopf._core.intents.handlers import WebhookHandler

# kopf's per-object memories, whose memo recall admission goes through.
from kopf._core.reactor.inventory import ResourceMemories

__all__ = [
    "Request",
    "ResourceMemories",
    "Response",
    "WebhookHandler",
    "WebhookType",
    "admission",
    "auth",
    "bodies",
    "credentials",
    "ephemera",
    "errors",
    "references",
    "registered_handlers",
    "registered_selectors",
    "scanning",
]


def registered_handlers(registry: kopf.OperatorRegistry) -> Iterable[WebhookHandler]:
    """Every webhook handler registered: the registry keeps them in a private field."""
    handlers: Iterable[WebhookHandler] = registry._webhooks.get_all_handlers()
    return handlers


def registered_selectors(registry: kopf.OperatorRegistry) -> Iterable[references.Selector]:
    """The selectors of the registered webhook handlers' resources (a private field)."""
    selectors: Iterable[references.Selector] = registry._webhooks.get_all_selectors()
    return selectors
