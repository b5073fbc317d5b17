"""The engine's public face: outside `muster.scheduler` only the package itself and
`muster.scheduler.decisions` are imported, and everything they offer is importable.

The import-linter contract "The engine's face" protects each room by name; this test
keeps its list whole (a room added later is protected too) and reads the code for
the imports the contract checks, counting them as the design does."""

from __future__ import annotations

import ast
import pkgutil
import tomllib
from pathlib import Path

import muster.scheduler
import muster.scheduler.decisions

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "src" / "muster"
FACES = {"muster.scheduler", "muster.scheduler.decisions"}


def engine_modules_imported_outside() -> dict[str, set[str]]:
    """Engine module -> the modules outside the engine that import it."""
    found: dict[str, set[str]] = {}
    for path in SOURCE.rglob("*.py"):
        if path.is_relative_to(SOURCE / "scheduler"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                if module == "muster.scheduler" or module.startswith("muster.scheduler."):
                    found.setdefault(module, set()).add(str(path.relative_to(ROOT)))
    return found


def protected() -> set[str]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (face,) = (c for c in contracts["contracts"] if c["name"].startswith("The engine's face"))
    assert face["allowed_importers"] == ["muster.scheduler"]
    return set(face["protected_modules"])


def test_outside_the_engine_only_its_faces_are_imported() -> None:
    imported = engine_modules_imported_outside()
    assert set(imported) <= FACES, {m: f for m, f in imported.items() if m not in FACES}


def test_the_contract_protects_every_room_and_module_but_the_faces() -> None:
    children = {
        f"muster.scheduler.{info.name}" for info in pkgutil.iter_modules(muster.scheduler.__path__)
    }
    decisions = {
        f"muster.scheduler.decisions.{info.name}"
        for info in pkgutil.iter_modules(muster.scheduler.decisions.__path__)
    }
    assert protected() == (children - FACES) | decisions


def test_everything_the_faces_offer_is_there() -> None:
    for face in (muster.scheduler, muster.scheduler.decisions):
        missing = [name for name in face.__all__ if not hasattr(face, name)]
        assert missing == []
