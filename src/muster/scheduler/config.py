"""Tunables of the decision engine, passed to every cycle (never read from globals)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """How the engine trades throughput against fairness.

    `starvation_seconds`: a gang pending longer than this (since its PodGroup was
    created, or since it was last preempted or rolled back) stops being overtaken by
    backfill. Until then smaller gangs behind it may
    use capacity it cannot use yet; after it, that capacity is held for it.
    """

    starvation_seconds: float = 600.0

    def __post_init__(self) -> None:
        if self.starvation_seconds < 0:
            raise ValueError("starvation_seconds must not be negative")
