"""One word per meaning: the senses the glossary (docs/architecture.md, "Words") retired
stay retired in the code, the docs and the metrics.

A word that meant several things made a reader stop at each use to find out which:
"release" was the plan's action, capacity pods free by ending and devices freed;
"held" was gated, reserved, device-claimed and the Lease; "lifecycle" a package, a
module of another package and two classes. Each sense now has its own word, and this
test fails where an old one comes back.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[3]
SOURCE = ROOT / "src" / "muster"
ENGINE = SOURCE / "scheduler"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GLOSSARY = ROOT / "docs" / "architecture.md"

# "held" only as the glossary defines it: held back by a scheduling gate.
_HELD = re.compile(r"\bheld\b(?! back\b)(?! by [\w' ]*?\bgate\b)", re.IGNORECASE)
_SPACE = re.compile(r"\s+(?:#\s*)?")  # line breaks (and comment marks) read as one space
_METRIC = re.compile(r"\"(muster_[a-z_]+)\"")


def _text(path: Path) -> str:
    return _SPACE.sub(" ", path.read_text())


def _sources() -> list[Path]:
    return sorted(SOURCE.rglob("*.py"))


def test_release_in_the_forecast_and_the_devices_is_a_vacancy_or_a_deallocation() -> None:
    """Capacity pods free by ending is a vacancy (`forecast.Vacancy`); devices freed are
    deallocated: neither is called a release, the plan's action."""
    rooms = [ENGINE / "forecast", ENGINE / "devices"]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for room in rooms
        for path in sorted(room.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if re.search(r"releas", line, re.IGNORECASE)
    ]
    assert not found, "release is the plan's action alone:\n" + "\n".join(found)


def test_the_plan_alone_has_a_release_class() -> None:
    classes = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in _sources()
        for match in re.finditer(r"^class \w*Release\b", path.read_text(), re.MULTILINE)
    ]
    assert classes == ["src/muster/scheduler/decisions/plan.py: class Release"], classes


def test_held_means_held_back_by_a_gate() -> None:
    found = [
        f"{path.relative_to(ROOT)}: …{text[max(match.start() - 60, 0) : match.end() + 20]}…"
        for path in [*_sources(), *PAGES]
        for text in [_text(path)]
        for match in _HELD.finditer(text)
    ]
    assert not found, "held, in another sense than held back by a gate:\n" + "\n".join(found)


def test_lifecycle_names_the_package_that_follows_a_gang() -> None:
    """The package `scheduler.lifecycle`; what the engine remembers of a gang is its
    memory (`GangMemory`), whatever the status field (`status.lifecycle`) is called."""
    modules = [
        str(path.relative_to(SOURCE))
        for path in _sources()
        if "lifecycle" in path.stem or ("lifecycle" in str(path.parent.relative_to(SOURCE)))
    ]
    assert all(module.startswith("scheduler/lifecycle/") for module in modules), modules
    classes = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in _sources()
        for match in re.finditer(r"^class \w*Lifecycle\w*", path.read_text(), re.MULTILINE)
    ]
    assert not classes, classes


def test_metric_names_say_release_only_for_the_plans_action() -> None:
    names = sorted({name for path in _sources() for name in _METRIC.findall(path.read_text())})
    assert names, "no metric found: the pattern no longer matches how metrics are named"
    for name in names:
        assert "held" not in name and "lifecycle" not in name, name
        assert "releas" not in name or name == "muster_pods_released_total", name


def test_the_glossary_defines_each_word() -> None:
    words = GLOSSARY.read_text().partition("## Words")[2].partition("\n## ")[0]
    for word in (
        "*release*",
        "*held back*",
        "*vacancy*",
        "*deallocated*",
        "*claimed*",
        "*lifecycle*",
    ):
        assert word in words, f"the glossary does not define {word}"


def test_admission_names_gang_admission_and_the_webhooks_not_an_operator_room() -> None:
    """The operator's room that keeps the webhooks' certificate and watches is their
    feeds (`operator.webhook_feeds`); admission is the gang's, and the webhooks'."""
    assert not (SOURCE / "operator" / "admission").exists()
    retired = re.compile(r"operator[./]admission\b")
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in [*_sources(), *PAGES]
        for match in retired.finditer(path.read_text())
    ]
    assert not found, found
