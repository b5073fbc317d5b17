"""hack/, bench/ and the tests share one of each dev tool (devtools/): read from the code,
one `free_port`, one operator launcher, one kubectl wrapper and one local cluster, each
where devtools puts it."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable

from devtools.builds import ROOT

TREES = ("hack", "bench", "tests", "devtools")
# What a launcher of the operator puts on `muster run`'s command line.
LAUNCH_FLAGS = ("--health-port=", "--webhook-port=")


@functools.cache
def modules() -> tuple[tuple[str, ast.Module], ...]:
    """Every module of the trees, parsed once."""
    return tuple(
        (str(path.relative_to(ROOT)), ast.parse(path.read_text()))
        for tree in TREES
        for path in sorted((ROOT / tree).rglob("*.py"))
    )


def defined(name: str) -> list[str]:
    """The modules that define a function or class `name` at any depth."""
    return [
        path
        for path, module in modules()
        for node in ast.walk(module)
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name
    ]


def text_of(node: ast.expr) -> str:
    """A string literal's text, or an f-string's leading literal part."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        return text_of(node.values[0])
    return ""


def launches_the_operator(node: ast.AST) -> bool:
    """A command line of `muster run`: the word `run` beside a port flag of the
    operator's, in one list or tuple."""
    if not isinstance(node, ast.List | ast.Tuple):
        return False
    texts = [text_of(element) for element in node.elts]
    return "run" in texts and any(text.startswith(LAUNCH_FLAGS) for text in texts)


def runs_kubectl(node: ast.AST) -> bool:
    """A path to the built kubectl: `... / "kubectl"`."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div)
        and text_of(node.right) == "kubectl"
    )


def where(matching: Callable[[ast.AST], bool]) -> list[str]:
    """The modules with a node `matching`."""
    return sorted(
        {path for path, module in modules() for node in ast.walk(module) if matching(node)}
    )


def test_one_free_port() -> None:
    assert defined("free_port") == ["devtools/ports.py"]


def test_one_operator_launcher() -> None:
    assert defined("OperatorProcess") == ["devtools/operator.py"]
    assert where(launches_the_operator) == ["devtools/operator.py"]


def test_one_kubectl_wrapper() -> None:
    assert defined("Kubectl") == ["devtools/kubectl.py"]
    assert where(runs_kubectl) == ["devtools/kubectl.py"]


def test_the_cluster_command_line_is_only_a_command_line() -> None:
    """hack/cluster.py parses arguments; what it runs is devtools/cluster's."""
    [module] = [module for path, module in modules() if path == "hack/cluster.py"]
    functions = [node.name for node in module.body if isinstance(node, ast.FunctionDef)]
    assert functions == ["main"]


def test_one_local_cluster() -> None:
    assert defined("LocalCluster") == ["devtools/cluster/local.py"]
