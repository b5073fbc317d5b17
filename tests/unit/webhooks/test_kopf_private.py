"""kopf's private modules are reached through one module, at the one kopf version they
were read at: a kopf upgrade is then one file to read again, not a hunt."""

from __future__ import annotations

import ast
import tomllib
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
WRAPPER = ROOT / "src" / "muster" / "webhooks" / "kopf_private.py"
CODE = ("src", "tests", "bench", "hack")


def private_kopf_uses(path: Path) -> list[str]:
    """The `kopf._…` modules a file imports, and its reads of the registry's private
    `_webhooks` field."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kopf._"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} from {node.module}")
        elif isinstance(node, ast.Import):
            found.extend(
                f"{path.relative_to(ROOT)}:{node.lineno} import {alias.name}"
                for alias in node.names
                if alias.name.startswith("kopf._")
            )
        elif isinstance(node, ast.Attribute) and node.attr == "_webhooks":
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} ._webhooks")
    return found


def test_only_the_wrapper_reaches_into_kopf_s_private_modules() -> None:
    files = (path for folder in CODE for path in (ROOT / folder).rglob("*.py"))
    uses = [use for path in files if path != WRAPPER for use in private_kopf_uses(path)]
    assert uses == []
    assert private_kopf_uses(WRAPPER), "the wrapper is the one place they are imported"


def test_kopf_is_pinned_to_the_version_installed() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (kopf,) = (spec for spec in project["dependencies"] if spec.startswith("kopf"))
    assert kopf == f"kopf=={version('kopf')}"
