"""Arrays with a row per slot (a node's, a pod's), grown as slots are added.

Rows are added one at a time as objects arrive; doubling the capacity keeps the copy
that growing takes to a constant share of the adds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def grown(array: npt.NDArray[Any], rows: int, fill: object = 0) -> npt.NDArray[Any]:
    """The array with room for at least `rows` rows (itself when it has), new rows `fill`."""
    if rows <= array.shape[0]:
        return array
    new_rows = max(rows, 2 * array.shape[0], 16)
    larger = np.full((new_rows, *array.shape[1:]), fill, dtype=array.dtype)
    larger[: array.shape[0]] = array
    return larger
