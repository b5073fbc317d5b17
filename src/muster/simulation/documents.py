"""Parsed input documents and the problems found in them, each tied to where it came from.

A user who feeds a dozen files to `muster simulate` must be told which document is
wrong, so every object carries its origin (`file:index`) from parsing to the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Document:
    """One parsed YAML document: `index` counts documents in `source` from 1."""

    source: str
    index: int
    body: object

    @property
    def origin(self) -> str:
        return f"{self.source}:{self.index}"


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong (or ignored) in the input, worded for the line `origin: message`."""

    origin: str
    message: str

    def __str__(self) -> str:
        return f"{self.origin}: {self.message}"


class InvalidInputError(Exception):
    """The input cannot be simulated; carries every problem found, not just the first."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__("\n".join(str(problem) for problem in problems))
        self.problems = tuple(problems)
