"""A pod's part in a gang: the label that makes it a member, and the gang gate in its
`spec.schedulingGates` (present, added, taken away).

The webhooks add the gate, the engine reads it, `muster simulate` lifts it: each asks
the same question of the same list, so the answer lives here once. Gates are read
leniently (an entry that is not a mapping is some other gate), as the lists come
from objects the engine must survive.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from muster.api.constants import GANG_GATE, POD_GROUP_LABEL


def pod_group_name(pod: Mapping[str, Any]) -> str | None:
    """The PodGroup the pod joins by its label (in its own namespace), if any."""
    name = ((pod.get("metadata") or {}).get("labels") or {}).get(POD_GROUP_LABEL)
    return name if isinstance(name, str) and name else None


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
