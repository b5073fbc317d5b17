"""Adoption refuses to start beside a scheduler that really serves an adopted API.

Two gang schedulers must never hold the same pods. A scheduler that runs binds pods,
and tells each bind by an Event of reason `Scheduled` whose reporter is its scheduler
name: kube-scheduler reports as its profile's name (`reportingComponent`), Volcano as
`volcano` (`source.component`). So every replica that adopts lists the cluster's
`Scheduled` events once at start (the API server keeps events an hour by default) and
refuses to start when one of the adopted scheduler names bound a pod. A scheduler
installed later is noticed at the next start.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from muster.api.adoption import Adoption
from muster.client.discovery import served
from muster.client.kube import Kube

logger = logging.getLogger(__name__)

EVENTS = "/api/v1/events"
SCHEDULED = {"fieldSelector": "reason=Scheduled"}


class AdoptedSchedulerRunningError(RuntimeError):
    """A scheduler Muster would stand in for binds pods in this cluster."""


def binding_schedulers(events: Iterable[Mapping[str, Any]]) -> set[str]:
    """The names that reported a `Scheduled` event: the schedulers that bound pods."""
    names = set()
    for event in events:
        if event.get("reason") != "Scheduled":
            continue
        for name in (event.get("reportingComponent"), (event.get("source") or {}).get("component")):
            if isinstance(name, str) and name:
                names.add(name)
    return names


def refusal(adoption: Adoption, running: set[str]) -> str | None:
    """Why adoption must not start, or None."""
    found = sorted(running & set(adoption.scheduler_names))
    if not found:
        return None
    return (
        f"adoption refused: the scheduler {', '.join(found)} binds pods in this cluster "
        "(Scheduled events it reported); Muster adopts only PodGroups no running scheduler "
        "serves (docs/frameworks.md)"
    )


async def check_no_adopted_scheduler(kube: Kube, adoption: Adoption) -> None:
    """Raise :class:`AdoptedSchedulerRunningError` when an adopted scheduler runs."""
    events, _ = await kube.list_all(EVENTS, query=SCHEDULED)
    reason = refusal(adoption, binding_schedulers(events))
    if reason is not None:
        raise AdoptedSchedulerRunningError(reason)


async def adoption_to_start(kube: Kube, adoption: Adoption | None) -> Adoption | None:
    """The adoption this replica starts with: the APIs of `adoption` the API server
    serves (their CRDs installed before Muster starts), after
    :func:`check_no_adopted_scheduler`; None when nothing is adopted."""
    if adoption is None:
        return None
    await check_no_adopted_scheduler(kube, adoption)
    apis = []
    for api in adoption.apis:
        if await served(kube, f"/apis/{api.api_version}"):
            apis.append(api)
        else:
            logger.warning("not adopting %s: %s is not served", api.name, api.api_version)
    return replace(adoption, apis=tuple(apis)) if apis else None
