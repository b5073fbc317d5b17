"""Good and bad manifests shared by the unit and the end-to-end tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CASES_FILE = Path(__file__).with_name("cases.yaml")


@dataclass(frozen=True, slots=True)
class Case:
    """One manifest and what must be said about it; see cases.yaml."""

    name: str
    layer: str
    manifest: dict[str, Any]
    problems: tuple[str, ...]
    server: str | None
    context: tuple[dict[str, Any], ...] = ()

    @property
    def documents(self) -> list[dict[str, Any]]:
        """What `muster validate` is given: the context, then the manifest."""
        return [*self.context, self.manifest]

    @property
    def index(self) -> int:
        """The manifest's document number (from 1) in :attr:`documents`."""
        return len(self.context) + 1

    @property
    def server_message(self) -> str:
        """What kubectl's error must contain when the API server rejects it."""
        if self.server is not None:
            return self.server
        return self.problems[0].split(": ", 1)[1]


def load_cases() -> list[Case]:
    """Every case, in file order."""
    raw = yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))
    return [
        Case(
            name=entry["name"],
            layer=entry["layer"],
            manifest=entry["manifest"],
            problems=tuple(entry["problems"]),
            server=entry.get("server"),
            context=tuple(entry.get("context") or ()),
        )
        for entry in raw
    ]
