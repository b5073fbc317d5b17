"""The index by namespace and name behaves as a mapping keyed by both."""

from __future__ import annotations

from muster.client.name_index import NameIndex


def test_values_by_namespace_and_name() -> None:
    index: NameIndex[int] = NameIndex()
    index.put("a", "p", 1)
    index.put("a", "q", 2)
    index.put("b", "p", 3)
    index.put("a", "p", 4)
    assert (index.get("a", "p"), index.get("b", "p"), index.get("b", "q")) == (4, 3, None)
    assert index.get("z", "p") is None
    assert (index.pop("b", "p"), index.pop("b", "p"), index.pop("z", "x")) == (3, None, None)
    assert sorted(index.missing_from(NameIndex())) == [("a", "p"), ("a", "q")]


def test_the_keys_missing_from_another_index() -> None:
    known: NameIndex[bool] = NameIndex()
    listed: NameIndex[bool] = NameIndex()
    for namespace, name in [("a", "p"), ("a", "q"), ("b", "p")]:
        known.put(namespace, name, True)
    listed.put("a", "q", True)
    listed.put("d", "s", True)
    assert sorted(known.missing_from(listed)) == [("a", "p"), ("b", "p")]
    assert listed.missing_from(known) == [("d", "s")]
