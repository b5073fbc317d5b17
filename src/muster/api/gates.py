"""The gang gate in a pod's `spec.schedulingGates`: present, added, taken away.

The webhooks add it, the engine reads it, `muster simulate` lifts it: each asks the
same question of the same list, so the answer lives here once. Gates are read
leniently (an entry that is not a mapping is some other gate), as the lists come
from objects the engine must survive.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from muster.api.constants import GANG_GATE


def is_gang_gate(gate: object) -> bool:
    return isinstance(gate, Mapping) and gate.get("name") == GANG_GATE


def has_gang_gate(gates: Iterable[object]) -> bool:
    return any(is_gang_gate(gate) for gate in gates)


def with_gang_gate(gates: Iterable[Any]) -> list[Any]:
    """The gates with the gang gate last (unchanged when it is there already)."""
    kept = list(gates)
    return kept if has_gang_gate(kept) else [*kept, {"name": GANG_GATE}]


def without_gang_gate(gates: Iterable[Any]) -> list[Any]:
    """The other gates, in their order."""
    return [gate for gate in gates if not is_gang_gate(gate)]
