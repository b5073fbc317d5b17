"""No module of muster imports itself back, through any chain, type-only imports included.

An import under `if TYPE_CHECKING:` costs nothing at run time, but a reader walking
from a module to what it uses comes back where they started all the same. grimp (the
graph import-linter builds its contracts on) records those imports too; the first
test makes sure it still does, by finding each of them in the source itself.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import grimp

SOURCE = Path(__file__).resolve().parents[2] / "src"


@cache
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("muster", exclude_type_checking_imports=False, cache_dir=None)


def module_of(path: Path) -> str:
    parts = path.relative_to(SOURCE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def type_only_imports() -> list[tuple[str, str]]:
    """(importer, imported) for each `from muster... import` under `if TYPE_CHECKING:`."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
                found += [
                    (module_of(path), statement.module)
                    for statement in ast.walk(node)
                    if isinstance(statement, ast.ImportFrom)
                    and statement.module is not None
                    and statement.module.startswith("muster.")
                ]
    return found


def test_the_graph_holds_the_type_only_imports() -> None:
    imports = type_only_imports()
    assert imports, "no type-only import left to check the graph with"
    missing = [
        (importer, imported)
        for importer, imported in imports
        if not graph().direct_import_exists(importer=importer, imported=imported)
    ]
    assert not missing


def test_no_module_imports_itself_back() -> None:
    circles = set()
    for importer in graph().modules:
        for imported in graph().find_modules_directly_imported_by(importer):
            back = graph().find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                circles.add(" -> ".join((importer, *back)))
    assert not circles, "import cycles:\n" + "\n".join(sorted(circles))
