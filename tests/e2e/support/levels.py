"""The node labels of the e2e topology tests' three levels, and the annotations asking for them."""

from __future__ import annotations

from muster.api.constants import (
    TOPOLOGY_PREFERRED_ANNOTATION as PREFERRED,
)
from muster.api.constants import (
    TOPOLOGY_SLICE_ANNOTATION as SLICE,
)
from muster.api.constants import (
    TOPOLOGY_SLICE_SIZE_ANNOTATION as SLICE_SIZE,
)

ZONE = "topology.kubernetes.io/zone"
BLOCK = "example.com/block"
RACK = "example.com/rack"

__all__ = ["BLOCK", "PREFERRED", "RACK", "SLICE", "SLICE_SIZE", "ZONE"]
