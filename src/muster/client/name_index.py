"""Values by namespace and name, for the indexes the operator keeps for every pod.

Keyed by a (namespace, name) tuple, each of 50,000 entries kept a tuple of its own
(56 B) besides its place in the dict; keyed by namespace, then by name, an entry is
only its place, and the names are the ones the records already share.
"""

from __future__ import annotations

from typing import Generic, TypeVar

_Value = TypeVar("_Value")


class NameIndex(Generic[_Value]):
    """A mapping from (namespace, name) to a value, stored as nested dicts."""

    def __init__(self) -> None:
        self._namespaces: dict[str, dict[str, _Value]] = {}

    def get(self, namespace: str, name: str) -> _Value | None:
        names = self._namespaces.get(namespace)
        return None if names is None else names.get(name)

    def put(self, namespace: str, name: str, value: _Value) -> None:
        self._namespaces.setdefault(namespace, {})[name] = value

    def pop(self, namespace: str, name: str) -> _Value | None:
        names = self._namespaces.get(namespace)
        if names is None:
            return None
        value = names.pop(name, None)
        if not names:
            del self._namespaces[namespace]
        return value

    def missing_from(self, other: NameIndex[_Value]) -> list[tuple[str, str]]:
        """The keys here that `other` does not have."""
        return [
            (namespace, name)
            for namespace, names in self._namespaces.items()
            for name in names.keys() - other._namespaces.get(namespace, {}).keys()
        ]
