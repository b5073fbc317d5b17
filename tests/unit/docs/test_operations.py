"""docs/operations.md lists every flag of `muster run` as the code declares it.

The table is the operator's configuration reference; a flag added, renamed or given
another default without the page following fails here.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import fields
from pathlib import Path

from muster.operator.config import OperatorConfig, add_arguments, env_name
from muster.operator.metrics import Metrics

PAGE = Path(__file__).parents[3] / "docs" / "operations.md"
_ENV_AND_DEFAULT = re.compile(r" \(env MUSTER_[A-Z_]+; default .*\)$", re.DOTALL)


def _default(value: object) -> str:
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if value is None or value == "":
        return "unset"
    return f"`{value}`"


def configuration_rows() -> list[str]:
    """One table row per flag: flag, environment variable, default, what it does."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    helps = {action.dest: action.help or "" for action in parser._actions}
    rows = []
    for field in fields(OperatorConfig):
        flag = "--" + field.name.replace("_", "-")
        if isinstance(field.default, bool):
            flag = f"{flag}`, `--no-{flag[2:]}"
        meaning = _ENV_AND_DEFAULT.sub("", helps[field.name]).replace("\n", " ")
        rows.append(
            f"| `{flag}` | `{env_name(field.name)}` | {_default(field.default)} | {meaning} |"
        )
    return rows


def test_every_flag_is_in_the_configuration_table() -> None:
    page = PAGE.read_text()
    missing = [row for row in configuration_rows() if row not in page.splitlines()]
    assert not missing, "docs/operations.md is stale; rows expected:\n" + "\n".join(missing)


def test_the_table_lists_no_flag_the_operator_lacks() -> None:
    documented = set(re.findall(r"^\| `(--[a-z-]+)`", PAGE.read_text(), re.MULTILINE))
    declared = {"--" + field.name.replace("_", "-") for field in fields(OperatorConfig)}
    assert documented == declared


def test_every_metric_is_documented() -> None:
    page = PAGE.read_text()
    names = {
        metric.name for metric in Metrics().registry.collect() if metric.name.startswith("muster_")
    }
    assert names
    undocumented = [name for name in sorted(names) if f"`{name}" not in page]
    assert not undocumented
