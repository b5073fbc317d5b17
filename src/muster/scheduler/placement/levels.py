"""Preferred topology levels: one rack where one has room, else one block, else anywhere.

A gang may prefer to sit in one domain of a narrow level (its PodGroup's
topology-preferred annotation). The engine's configured levels, widest first, say
which levels are wider: the gang goes to one domain of the preferred level if one
takes it, else of the next wider level, and so on up to (not including) its required
key, and otherwise wherever its required domain, or the whole cluster, allows. A
preferred key of no configured level is its own only step. Every step stays inside
the required domain: a domain of a level is cut by the required key's domains, so
a rack label reused in two zones makes two domains.

Each step is the same best fit as the required domain's (`fit_in_one`), so per-node
rules and inter-pod rules hold whichever step places the gang.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from muster.scheduler.placement.explain import NO_NODE_CARRIES
from muster.scheduler.placement.topology import Domains, GangPlacement
from muster.scheduler.rules.labels import LabelIndex

SHOWN_SHORTFALL = 1  # domains named when a level is passed over


def ladder(preferred: str, required: str | None, levels: Sequence[str]) -> tuple[str, ...]:
    """The keys to try before the required domain as a whole, narrowest first."""
    if preferred not in levels:
        return () if preferred == required else (preferred,)
    wider = levels[: levels.index(preferred) + 1]
    if required in levels and required not in wider:
        return ()  # the required domain is narrower than the preferred level already
    steps = tuple(reversed(wider))
    return steps[: steps.index(required)] if required in steps else steps


def level_domains(labels: LabelIndex, key: str, required: str | None) -> Domains:
    """The domains of `key`, each cut by the required key's domains (ids in name order)."""
    whole = Domains.of(labels, key)
    if required is None or required == key:
        return whole
    values, names = whole.values, whole.names
    outer = labels.values_of(required)
    outer_vocabulary = labels.vocabulary(required)
    outer_names = sorted(outer_vocabulary, key=lambda value: outer_vocabulary[value])
    width = len(outer_names) + 1
    labelled = (values >= 0) & (outer >= 0)
    codes = values.astype(np.int64) * width + outer
    present = np.unique(codes[labelled])
    by_name = sorted(
        range(len(present)),
        key=lambda index: (
            names[int(present[index]) // width],
            outer_names[int(present[index]) % width],
        ),
    )
    rank = np.empty(len(present), dtype=np.int32)
    rank[by_name] = np.arange(len(present), dtype=np.int32)
    ids = np.full(values.shape, -1, dtype=np.int32)
    ids[labelled] = rank[np.searchsorted(present, codes[labelled])]
    return Domains(key, ids, tuple(names[int(present[index]) // width] for index in by_name))


def fit_preferring(
    steps: Sequence[str],
    *,
    required: str | None,
    labels: LabelIndex,
    needed: int,
    fit_in: Callable[[Domains, Domains | None], GangPlacement],
    fallback: Callable[[Domains | None], GangPlacement],
    sliced: tuple[str, int] | None = None,
) -> GangPlacement:
    """The gang at the narrowest step with room, else as `fallback` places it; a
    placement at a wider step or the fallback says why each narrower one was passed
    over (`sliced`: the gang's slice level and size, which the reason names). Each
    wider step is handed the domains of the step before it (`fit_in(domains,
    inner)`), so a gang that falls back to a block fills it rack by rack."""
    passed_over: list[str] = []
    inner: Domains | None = None
    for key in steps:
        if not labels.vocabulary(key):
            passed_over.append(f"{NO_NODE_CARRIES} {key}")
            continue
        domains = level_domains(labels, key, required)
        placement = fit_in(domains, inner)
        if placement.placements:
            return _with(_named_by_constraint(placement, labels, required), passed_over)
        passed_over.append(shortfall(key, placement, needed, sliced))
        inner = domains
    placement = fallback(inner)
    return _with(placement, passed_over) if placement.placements else placement


def shortfall(
    key: str, placement: GangPlacement, needed: int, sliced: tuple[str, int] | None = None
) -> str:
    """Why no domain of `key` took the gang (`no rack domain has room for 8 pods: r3
    takes 6`; with slices, `... for 16 pods in slices of 8 per rack: b1 takes 8`)."""
    words = f"no {key} domain has room for {needed} pods"
    if sliced is not None:
        words += f" in slices of {sliced[1]} per {sliced[0]}"
    best = sorted(placement.fits, key=lambda fit: (-fit.fits, fit.domain))[:SHOWN_SHORTFALL]
    if not best or best[0].fits == 0:
        return words
    return (
        words + ": " + ", ".join(f"{fit.domain.split('=', 1)[1]} takes {fit.fits}" for fit in best)
    )


def _named_by_constraint(
    placement: GangPlacement, labels: LabelIndex, required: str | None
) -> GangPlacement:
    """The placement named for the domain that constrained it: the required one when
    it lies inside one domain of the preferred level, which is wider (a required rack
    inside a preferred zone: the zone keeps the gang in no narrower place than the
    rack does); else the preferred level's, the narrower (or, for one and the same
    set of nodes, the one the gang asked for last)."""
    if required is None or placement.key in (None, required):
        return placement
    outer = labels.values_of(required)
    level = labels.values_of(placement.key)
    slot = next(iter(placement.placements.values()))
    value_id, level_id = int(outer[slot]), int(level[slot])
    in_required = outer == value_id
    uncut = bool((level[in_required] == level_id).all())
    wider = bool((level[~in_required] == level_id).any())
    if not (uncut and wider):
        return placement
    vocabulary = labels.vocabulary(required)
    name = next(value for value, index in vocabulary.items() if index == value_id)
    return replace(placement, key=required, domain=name)


def _with(placement: GangPlacement, passed_over: list[str]) -> GangPlacement:
    return replace(placement, passed_over=tuple(passed_over)) if passed_over else placement
