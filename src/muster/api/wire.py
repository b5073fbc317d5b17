"""Kubernetes objects as they travel: plain JSON mappings, read as the API server and
YAML files hold them, not as parsed models.

The engine, the operator and `muster simulate` all read objects this way (the
pydantic models are for validation and schemas), so the name of that type lives once
here, at the bottom of the layers.
"""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]
"""An object, or any part of one, as decoded JSON."""
