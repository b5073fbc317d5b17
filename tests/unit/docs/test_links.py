"""Every relative link of the README and docs/ leads somewhere: the file exists, and so
does the heading it points at (anchors as GitHub makes them from headings)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors_of(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text())
    return {anchor(heading) for heading in _HEADING.findall(text)}


def links_of(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text())
    return [target for target in _LINK.findall(text) if "://" not in target]


def test_anchor_follows_github() -> None:
    assert anchor("Choosing `--release-timeout`") == "choosing---release-timeout"
    assert anchor("`muster validate`: will the API server accept it?") == (
        "muster-validate-will-the-api-server-accept-it"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in links_of(page):
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists() or (
            fragment and linked.suffix == ".md" and fragment not in anchors_of(linked)
        ):
            broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"
