"""The engine's tunables refuse values that make no sense."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from muster.scheduler import EngineConfig


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("starvation_seconds", -1.0),
        ("max_rollbacks", -1),
        ("release_timeout", -0.5),
        ("victims_timeout", -1.0),
        ("rollback_backoff", -1.0),
    ],
)
def test_a_negative_tunable_is_refused_by_name(field: str, value: float) -> None:
    changes: dict[str, Any] = {field: value}
    with pytest.raises(ValueError, match=f"^{field} must not be negative$"):
        replace(EngineConfig(), **changes)


def test_zero_is_allowed_everywhere() -> None:
    config = EngineConfig(
        starvation_seconds=0,
        max_rollbacks=0,
        release_timeout=0,
        victims_timeout=0,
        rollback_backoff=0,
        rollback_backoff_max=0,
    )
    assert config.max_rollbacks == 0
