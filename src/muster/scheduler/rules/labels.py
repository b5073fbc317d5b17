"""Node labels as integer columns, so selectors are evaluated with numpy, not per node.

Each label key becomes an array over node slots holding a value id (-1: label absent).
Columns are built on first use and belong to one version of the node set; the cluster
state makes a new index whenever a node's labels (or the node set) change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int32]
Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_INT64 = re.compile(r"[+-]?\d{1,19}")

ABSENT = -1
UNKNOWN_VALUE = -2  # a value no node carries: equal to no column entry


def parse_int64(text: str) -> int | None:
    """A label value or bound read as Go's `strconv.ParseInt(text, 10, 64)` would."""
    if _INT64.fullmatch(text) is None:
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


class LabelIndex:
    """Per-key value-id columns over node slots (dead slots carry no labels)."""

    def __init__(self, names: Sequence[str | None], labels: Sequence[Mapping[str, str]]) -> None:
        self.size = len(names)
        self._names = names
        self._labels = labels
        self._columns: dict[str, IntArray] = {}
        self._vocabularies: dict[str, dict[str, int]] = {}
        self._integers: dict[str, tuple[Int64Array, BoolArray]] = {}
        self._name_column: IntArray | None = None
        self._name_vocabulary: dict[str, int] = {}

    def values_of(self, key: str) -> IntArray:
        column = self._columns.get(key)
        if column is None:
            vocabulary: dict[str, int] = {}
            column = np.full(self.size, ABSENT, dtype=np.int32)
            for slot, node_labels in enumerate(self._labels):
                value = node_labels.get(key)
                if value is not None:
                    column[slot] = vocabulary.setdefault(value, len(vocabulary))
            self._columns[key] = column
            self._vocabularies[key] = vocabulary
        return column

    def vocabulary(self, key: str) -> dict[str, int]:
        self.values_of(key)
        return self._vocabularies[key]

    def id_of(self, key: str, value: str) -> int:
        return self.vocabulary(key).get(value, UNKNOWN_VALUE)

    def ids_of(self, key: str, values: Sequence[str]) -> list[int]:
        vocabulary = self.vocabulary(key)
        return [vocabulary[value] for value in values if value in vocabulary]

    def integers_of(self, key: str) -> tuple[Int64Array, BoolArray]:
        """The label read as an integer per node, and where that reading succeeded."""
        cached = self._integers.get(key)
        if cached is None:
            values = self.values_of(key)
            by_id = np.zeros(max(len(self.vocabulary(key)), 1), dtype=np.int64)
            ok_by_id = np.zeros(max(len(self.vocabulary(key)), 1), dtype=np.bool_)
            for text, value_id in self.vocabulary(key).items():
                number = parse_int64(text)
                if number is not None:
                    by_id[value_id] = number
                    ok_by_id[value_id] = True
            present = values >= 0
            safe = np.where(present, values, 0)
            cached = (by_id[safe], present & ok_by_id[safe])
            self._integers[key] = cached
        return cached

    def name_ids(self) -> IntArray:
        if self._name_column is None:
            self._name_column = np.full(self.size, ABSENT, dtype=np.int32)
            for slot, name in enumerate(self._names):
                if name is not None:
                    self._name_column[slot] = self._name_vocabulary.setdefault(
                        name, len(self._name_vocabulary)
                    )
        return self._name_column

    def name_ids_of(self, names: Sequence[str]) -> IntArray:
        self.name_ids()
        known = [self._name_vocabulary[name] for name in names if name in self._name_vocabulary]
        return np.array(known, dtype=np.int32)
