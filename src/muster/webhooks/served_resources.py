"""The API resources the admission handlers serve: known before the webhooks say ready.

kopf routes an admission call to its handler through the resources it discovered
(`Insights.webhook_resources`), and scans the API's discovery once, when it starts.
A resource missing from that scan is never served: every call for it is answered
404 "The specified resource has no handlers" for the life of the process, and with
`failurePolicy: Fail` every opted-in Job and gang pod is refused. An API server that
has just restarted serves its discovery before every group is in it (the CRDs'
group comes last), so an operator started at that moment would miss it. Hence:

- the webhooks are ready only once every resource a handler needs is resolved;
- until then, the groups of the missing ones are scanned again, every
  RESCAN_INTERVAL, and what is found is added to kopf's insights (a resource lost
  later, say to a rescan kopf makes on a CRD's change while discovery is
  incomplete, is found again the same way);
- a call about a resource a handler serves but that is not resolved yet is told
  apart from one about a resource nobody here serves, so the server can answer it
  "not ready, call again" (see `serving.NotReadyError`) instead of 404.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
import kopf

from muster.webhooks.kopf_private import (
    auth,
    credentials,
    errors,
    references,
    registered_selectors,
    scanning,
)

logger = logging.getLogger(__name__)

RESCAN_INTERVAL = 1.0
"""Seconds between two checks (and, while one is missing, two scans) of the resources."""


class ServedResources:
    """The resources the registry's admission handlers serve, in kopf's insights."""

    def __init__(self, registry: kopf.OperatorRegistry, insights: references.Insights) -> None:
        self.insights = insights
        self.selectors = sorted(registered_selectors(registry), key=str)

    def unresolved(self) -> list[references.Selector]:
        """The handlers' resource selectors that match no discovered resource yet."""
        # A copy: the webhooks' thread reads the set while this loop's tasks revise it.
        known = set(self.insights.webhook_resources)
        return [selector for selector in self.selectors if not selector.select(known)]

    def resolved(self) -> bool:
        return not self.unresolved()

    def serves(self, review: Mapping[str, Any]) -> bool:
        """Whether a handler serves the resource an AdmissionReview is about, whether
        or not discovery has shown it yet."""
        request = review.get("request") or {}
        asked = request.get("resource") or {}
        resource = references.Resource(
            group=str(asked.get("group", "")),
            version=str(asked.get("version", "")),
            plural=str(asked.get("resource", "")),
            kind=(request.get("kind") or {}).get("kind"),
            preferred=True,
        )
        return any(selector.check(resource) for selector in self.selectors)

    async def rescan(self, settings: kopf.OperatorSettings) -> list[references.Selector]:
        """Scan the groups of the unresolved selectors and add what they select to
        kopf's insights; the selectors still unresolved after it.

        Only adds: a resource that is gone is kopf's to remove, from its watch of the
        CRDs; adding never makes the webhooks' thread see a served resource vanish.
        """
        missing = self.unresolved()
        groups = {selector.group or "" for selector in missing}
        found = await scanning.scan_resources(groups=groups, settings=settings, logger=logger)
        served = {resource for selector in self.selectors for resource in selector.select(found)}
        async with self.insights.revised:
            self.insights.webhook_resources.update(served)
            await self.insights.backbone.fill(resources=found)
            self.insights.revised.notify_all()
        return self.unresolved()

    async def keep_resolved(
        self,
        settings: kopf.OperatorSettings,
        vault: credentials.Vault,
        *,
        on_rescan: Callable[[], None],
    ) -> None:
        """Forever: once kopf's own scan is done, rescan whenever a selector is unresolved.

        `vault` is kopf's (passed to `kopf.operator`), whose credentials the scans use.
        """
        auth.vault_var.set(vault)
        await self.insights.ready_resources.wait()
        while True:
            if missing := self.unresolved():
                on_rescan()
                logger.warning(
                    "admission handlers wait for resources the API's discovery does not "
                    "show yet: %s; scanning again",
                    ", ".join(map(str, missing)),
                )
                try:
                    still = await self.rescan(settings)
                except (errors.APIError, aiohttp.ClientError, TimeoutError) as error:
                    logger.warning("scanning the API's resources failed: %s", error)
                else:
                    if not still:
                        logger.info("every resource of the admission handlers is resolved")
            await asyncio.sleep(RESCAN_INTERVAL)
