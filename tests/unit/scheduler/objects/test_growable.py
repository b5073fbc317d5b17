"""Per-slot arrays grown by doubling, new rows filled."""

from __future__ import annotations

import numpy as np

from muster.scheduler.objects.growable import grown


def test_an_array_with_room_is_itself() -> None:
    array = np.zeros((20, 3))
    assert grown(array, 20) is array


def test_growing_at_least_doubles_and_keeps_rows_and_columns() -> None:
    array = np.arange(40, dtype=np.int64).reshape(20, 2)
    larger = grown(array, 21, fill=-1)
    assert larger.shape == (40, 2) and larger.dtype == np.int64
    assert (larger[:20] == array).all() and (larger[20:] == -1).all()


def test_small_arrays_grow_to_sixteen_rows_or_what_is_asked() -> None:
    assert grown(np.zeros(0), 1).shape == (16,)
    assert grown(np.zeros(4), 100).shape == (100,)
