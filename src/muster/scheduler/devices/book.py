"""The devices of the cluster as the state keeps them: slices, classes, claims, templates.

Of each pool (driver, pool name) only the slices of its newest generation count, as
kube-scheduler's allocator gathers them; a pool with fewer slices of that
generation than it announces is incomplete: its devices are used, but a request
for all devices fails on its node. What a pod needs is resolved here
(`needs`): its claims, or the requests of the template whose claim is not made
yet, each with the devices already allocated to it, or why it must wait: a claim
whose selectors are not judged yet, or over budget (`selector_cases`). The
judgements themselves come from outside the engine (`judge`): a judgement is a
fact about an expression and a kind of device, the same whenever it is made, so it
is kept while a class, a claim still to allocate or a template uses its expression.
Those of expressions nothing uses any more are forgotten once the judgements
outgrow `KEPT_JUDGEMENTS` (and twice what was kept at the last forgetting): tenants
write the expressions, and a stream of new ones must not grow the leader's memory
without end.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from muster.api.keys import PodKey
from muster.scheduler.devices.intake import (
    ClaimRecord,
    ClaimSpec,
    Constraint,
    Device,
    DeviceId,
    PodClaim,
    Request,
    SliceRecord,
)
from muster.scheduler.devices.selector_cases import problem, selections, unjudged
from muster.scheduler.devices.selectors import Case, DeviceKind, Judgement, judge

_Asked = tuple[str, str, tuple[PodClaim, ...]]  # namespace, pod, its claims
KEPT_JUDGEMENTS = 1024  # judgements kept before those of unused expressions go
CLAIM_MISSING = "waiting for resourceclaim {name} to be created"
TEMPLATE_MISSING = "resourceclaimtemplate {name} not found"


@dataclass(frozen=True, slots=True)
class Need:
    """One claim a pod needs: `key` is the claim (a claim shared by pods has one key),
    `allocated` the devices its status holds (None: still to allocate)."""

    key: Hashable
    requests: tuple[Request, ...]
    allocated: tuple[DeviceId, ...] | None
    shared: bool  # named in the pod's spec: other pods may use it too
    constraints: tuple[Constraint, ...] = ()


@dataclass(frozen=True, slots=True)
class Pools:
    """The devices that count, per node, and the nodes with an incomplete pool."""

    on_node: dict[str, tuple[Device, ...]]
    incomplete: frozenset[str]


class DeviceBook:
    def __init__(self) -> None:
        self.slices: dict[str, SliceRecord] = {}
        self.classes: dict[str, tuple[str, ...]] = {}  # name -> selectors
        self.claims: dict[tuple[str, str], ClaimRecord] = {}
        self.templates: dict[tuple[str, str], ClaimSpec] = {}
        self.claimants: dict[PodKey, tuple[PodClaim, ...]] = {}  # pods with claims
        self.version = 0  # counts changes of slices, classes, claims and templates
        self.slices_version = 0  # counts changes of slices
        self.judged: dict[Case, Judgement] = {}  # shared by copies: facts, never revised
        self._pools: Pools | None = None
        self._kinds: tuple[DeviceKind, ...] | None = None
        self._unjudged: tuple[Hashable, list[Case]] | None = None
        self._forget_above = KEPT_JUDGEMENTS
        self._allocated: frozenset[DeviceId] | None = None
        self._needs: dict[_Asked, tuple[Need, ...] | str] = {}
        self._asked_about: dict[tuple[str, str], set[_Asked]] = {}  # claim -> what read it
        # What the placement derives from the book, kept for the cycles after (the
        # devices per node, those allocated): by what, its key (versions and node set).
        self.derived: dict[str, tuple[Hashable, object, Any]] = {}

    def copy(self) -> DeviceBook:
        twin = DeviceBook()
        twin.slices, twin.classes = dict(self.slices), dict(self.classes)
        twin.claims, twin.templates = dict(self.claims), dict(self.templates)
        twin.claimants, twin.version = dict(self.claimants), self.version
        twin.slices_version = self.slices_version
        twin._pools, twin._allocated = self._pools, self._allocated
        twin._kinds, twin.judged = self._kinds, self.judged
        twin._forget_above = self._forget_above
        twin.derived = dict(self.derived)
        return twin

    def changed(self, *, slices: bool = False, claim: tuple[str, str] | None = None) -> None:
        """Something changed: the slices, one claim (namespace, name), or else a class
        or a template, which any pod's needs may read."""
        self.version += 1
        self._allocated = None
        if claim is None:
            self._needs.clear()
            self._asked_about.clear()
        else:
            for asked in self._asked_about.pop(claim, ()):
                self._needs.pop(asked, None)
        if slices:
            self.slices_version += 1
            self._pools = None
            self._kinds = None

    def judge(self, found: Mapping[Case, Judgement]) -> bool:
        """Take in judgements of selector cases; whether any was new (the needs of
        pods that waited for them are resolved again)."""
        fresh = {case: judgement for case, judgement in found.items() if case not in self.judged}
        if not fresh:
            return False
        if len(self.judged) + len(fresh) > self._forget_above:
            self._forget_unused()
        self.judged.update(fresh)
        self.changed()
        return True

    def _forget_unused(self) -> None:
        """Drop the judgements of expressions no class, claim to allocate or template
        uses (a new dictionary: copies keep the one they share)."""
        used = {
            e
            for expressions, _, _ in selections(self._to_allocate(), self.classes)
            for e in expressions
        }
        self.judged = {case: j for case, j in self.judged.items() if case[0] in used}
        self._forget_above = max(KEPT_JUDGEMENTS, 2 * len(self.judged))

    def judge_in_place(self) -> None:
        """Judge every case the claims need, here and now, under the cost limit alone:
        for the offline commands, which have no loop to keep free. Once an expression
        is over budget on one kind, its claims wait: it is judged on no other."""
        while cases := self.unjudged():
            found: dict[Case, Judgement] = {}
            over: set[str] = set()
            for case in cases:
                if case[0] not in over:
                    found[case] = judgement = judge(case)
                    if judgement.stops:
                        over.add(case[0])
            self.judge(found)

    def kinds(self) -> tuple[DeviceKind, ...]:
        """The kinds of the devices that count, once each, in the pools' order."""
        if self._kinds is None:
            devices = self.pools().on_node.values()
            self._kinds = tuple(dict.fromkeys(d.kind for on_node in devices for d in on_node))
        return self._kinds

    def unjudged(self) -> list[Case]:
        """The selector cases to judge next for the claims still to allocate (and the
        templates their claims are made from)."""
        key = (self.version, len(self.judged))
        if self._unjudged is not None and self._unjudged[0] == key:
            return self._unjudged[1]
        found = unjudged(self._to_allocate(), self.classes, self.kinds(), self.judged)
        self._unjudged = (key, found)
        return found

    def _to_allocate(self) -> set[Request]:
        """The requests of the claims still to allocate and of the templates their
        claims are made from: those whose selectors are judged."""
        return {
            *(
                r
                for claim in self.claims.values()
                if claim.allocated is None
                for r in claim.requests
            ),
            *(r for spec in self.templates.values() for r in spec.requests),
        }

    def note_pod(self, key: PodKey, claims: tuple[PodClaim, ...]) -> None:
        if claims:
            self.claimants[key] = claims
        else:
            self.claimants.pop(key, None)

    def deallocate(self, namespace: str, claims: tuple[PodClaim, ...]) -> None:
        """The claims of a pod that left, deallocated as the resourceclaim controller
        deallocates them (for a what-if, where no controller runs): the claims made for
        the pod go, and a claim named in its spec is deallocated once no pod names it."""
        for claim in claims:
            key = (namespace, claim.claim or "")
            record = self.claims.get(key)
            if record is None or record.allocated is None:
                continue
            if not claim.shared:
                del self.claims[key]
            elif not self._named_by_a_pod(namespace, record.name):
                self.claims[key] = replace(record, allocated=None)
            else:
                continue
            self.changed(claim=key)

    def _named_by_a_pod(self, namespace: str, name: str) -> bool:
        return any(
            pod.namespace == namespace and any(claim.claim == name for claim in claims)
            for pod, claims in self.claimants.items()
        )

    def allocated_for(self, namespace: str, pod: str) -> bool:
        """Whether a claim made for the pod still has devices allocated (after the pod went,
        until the resourceclaim controller deletes its claims)."""
        return any(
            claim.owner == pod and claim.namespace == namespace and claim.allocated is not None
            for claim in self.claims.values()
        )

    @property
    def used(self) -> bool:
        return bool(self.slices or self.claimants)

    def pools(self) -> Pools:
        if self._pools is None:
            self._pools = _gather(self.slices.values())
        return self._pools

    def allocated(self) -> frozenset[DeviceId]:
        """Every device allocated to a claim, in the claims' status."""
        if self._allocated is None:
            self._allocated = frozenset(
                device for claim in self.claims.values() for device in claim.allocated or ()
            )
        return self._allocated

    def needs(
        self, namespace: str, pod: str, claims: tuple[PodClaim, ...]
    ) -> tuple[Need, ...] | str:
        """The claims the pod needs, or why they cannot be known yet (remembered until
        the book changes: every cycle asks it of every pod placed with claims)."""
        key = (namespace, pod, claims)
        found = self._needs.get(key)
        if found is None:
            found = self._needs[key] = self._resolve(namespace, pod, claims)
            for claim in claims:
                if claim.claim is not None:
                    self._asked_about.setdefault((namespace, claim.claim), set()).add(key)
        return found

    def _resolve(
        self, namespace: str, pod: str, claims: tuple[PodClaim, ...]
    ) -> tuple[Need, ...] | str:
        found = []
        for claim in claims:
            record = None if claim.claim is None else self.claims.get((namespace, claim.claim))
            key: Hashable
            if record is not None:
                key = (namespace, record.name)
                if record.allocated is None:
                    owner = f"resourceclaim {namespace}/{record.name}"
                    why = problem(owner, record.requests, self.classes, self.kinds(), self.judged)
                    if why is not None:
                        return why
                found.append(
                    Need(key, record.requests, record.allocated, claim.shared, record.constraints)
                )
            elif claim.shared:
                return CLAIM_MISSING.format(name=claim.claim)
            elif claim.template is not None:  # its claim not made yet, or not seen yet
                spec = self.templates.get((namespace, claim.template))
                if spec is None:
                    return TEMPLATE_MISSING.format(name=claim.template)
                owner = f"resourceclaimtemplate {namespace}/{claim.template}"
                why = problem(owner, spec.requests, self.classes, self.kinds(), self.judged)
                if why is not None:
                    return why
                key = (namespace, claim.claim) if claim.claim else (namespace, pod, claim.name)
                found.append(Need(key, spec.requests, None, False, spec.constraints))
        return tuple(found)


def _gather(slices: Iterable[SliceRecord]) -> Pools:
    newest: dict[tuple[str, str], int] = {}
    records = list(slices)
    for record in records:
        pool = (record.driver, record.pool)
        newest[pool] = max(newest.get(pool, record.generation), record.generation)
    current = [
        record for record in records if record.generation == newest[(record.driver, record.pool)]
    ]
    counted: dict[tuple[str, str], int] = {}
    for record in current:
        counted[(record.driver, record.pool)] = counted.get((record.driver, record.pool), 0) + 1
    on_node: dict[str, list[Device]] = {}
    incomplete = set()
    for record in sorted(current, key=lambda item: item.name):
        if record.node is None:
            continue  # devices reachable from several nodes: not modelled
        if counted[(record.driver, record.pool)] < record.slice_count:
            incomplete.add(record.node)
        on_node.setdefault(record.node, []).extend(record.devices)
    return Pools({node: tuple(devices) for node, devices in on_node.items()}, frozenset(incomplete))
