"""A file named on the command line, or standard input for '-'; an unreadable one is
a problem worded alike by every command."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from muster.cli.files import STDIN, UnreadableFileError, read_text


def test_a_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("kind: Node\n", encoding="utf-8")
    assert read_text(str(path)) == "kind: Node\n"


def test_a_dash_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: Pod\n"))
    assert read_text(STDIN) == "kind: Pod\n"


def test_a_missing_file_and_one_not_utf8_are_unreadable(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError, match=r"^cannot read: No such file or directory$"):
        read_text(str(tmp_path / "absent.yaml"))
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UnreadableFileError, match=r"^cannot read: not UTF-8 text$"):
        read_text(str(binary))
