"""The locks in requirements/ cover pyproject.toml: a dependency added there without
`make lock` fails here, rather than be installed unpinned or be missing from the image."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(requirements: list[str]) -> set[str]:
    return {normalized(match.group()) for line in requirements if (match := _NAME.match(line))}


def pinned(lock: Path) -> dict[str, list[str]]:
    """Package -> its hashes, for every `name==version` of a lock."""
    packages: dict[str, list[str]] = {}
    current = ""
    for line in lock.read_text().splitlines():
        if "==" in line and not line.startswith(" "):
            current = normalized(line.split("==", 1)[0])
            packages[current] = []
        elif "--hash=sha256:" in line:
            packages[current].append(line.strip())
    return packages


def test_every_dependency_is_pinned_with_hashes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = declared(project["dependencies"]) | {"setuptools"}
    for lock, wanted in (
        ("runtime.txt", runtime),
        ("dev.txt", runtime | declared(project["optional-dependencies"]["test"])),
    ):
        packages = pinned(ROOT / "requirements" / lock)
        assert wanted <= set(packages), f"run `make lock`: {wanted - set(packages)}"
        assert all(packages.values()), f"{lock}: a package without hashes"
