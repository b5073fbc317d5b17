"""Every label and annotation key Muster reads or writes under its own prefix.

The keys themselves are spelled once, where they are defined (`constants`, and
`adoption` for the adoption labels); this module only lists them, so that a key
under `scheduling.muster.dev/` that is none of them can be called a typo, with the
nearest known key as the likely intent.
"""

from __future__ import annotations

import difflib
from typing import Final

from muster.api.adoption import ADOPT_NAMESPACE_LABEL, ADOPTED_FROM_LABEL
from muster.api.constants import (
    ACTIVE_DEADLINE_ANNOTATION,
    BYPASSED_ANNOTATION,
    COMPLETIONS_ANNOTATION,
    CRON_JOB_ANNOTATION,
    DISRUPTION_MODE_ANNOTATION,
    EXPECTED_RUNTIME_ANNOTATION,
    GATED_FOR_ANNOTATION,
    GROUP,
    MIN_COUNT_ANNOTATION,
    PAUSED_ANNOTATION,
    POD_GROUP_LABEL,
    POLICY_LABEL,
    TEMPLATES_ANNOTATION,
    TOPOLOGY_KEY_ANNOTATION,
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_SLICE_ANNOTATION,
    TOPOLOGY_SLICE_SIZE_ANNOTATION,
)
from muster.api.names import LABEL_NAME_MAX_LENGTH

PREFIX: Final = f"{GROUP}/"
NEAR_PREFIX: Final = 0.8  # how alike a prefix must be to Muster's to be its typo

KNOWN_KEYS: Final = frozenset(
    {
        POLICY_LABEL,
        POD_GROUP_LABEL,
        ADOPTED_FROM_LABEL,
        ADOPT_NAMESPACE_LABEL,
        MIN_COUNT_ANNOTATION,
        TOPOLOGY_KEY_ANNOTATION,
        DISRUPTION_MODE_ANNOTATION,
        TOPOLOGY_PREFERRED_ANNOTATION,
        TOPOLOGY_SLICE_ANNOTATION,
        TOPOLOGY_SLICE_SIZE_ANNOTATION,
        EXPECTED_RUNTIME_ANNOTATION,
        ACTIVE_DEADLINE_ANNOTATION,
        CRON_JOB_ANNOTATION,
        TEMPLATES_ANNOTATION,
        GATED_FOR_ANNOTATION,
        BYPASSED_ANNOTATION,
        PAUSED_ANNOTATION,
        COMPLETIONS_ANNOTATION,
    }
)
_KNOWN_NAMES: Final = sorted(key.removeprefix(PREFIX) for key in KNOWN_KEYS)


def is_unknown(key: str) -> bool:
    """Whether `key` is under Muster's prefix, or a near miss of it
    (`scheduling.muster.io/...`), and none of its keys."""
    prefix, slash, _ = key.partition("/")
    if not slash or key in KNOWN_KEYS:
        return False
    if prefix == GROUP:
        return True
    near = prefix[: len(GROUP) + 8]
    return "muster" in near and difflib.SequenceMatcher(None, near, GROUP).ratio() >= NEAR_PREFIX


def nearest_key(key: str) -> str | None:
    """The known key `key` most likely meant (difflib's closest, as Python's own "did
    you mean" does), or None when none is close. Only the first characters a name
    may have are compared: a tenant's key costs no more than a real one."""
    name = key.partition("/")[2][: LABEL_NAME_MAX_LENGTH + 1]
    close = difflib.get_close_matches(name, _KNOWN_NAMES, n=1, cutoff=0.6)
    return PREFIX + close[0] if close else None
