"""The files a command is given: a path, or '-' for standard input.

`validate` and `simulate` report an unreadable file as a problem of that file, not
as a traceback, and both word it the same way.
"""

from __future__ import annotations

import sys
from pathlib import Path

STDIN = "-"


class UnreadableFileError(Exception):
    """The file could not be read as text; the message says why."""


def read_text(name: str) -> str:
    """The whole text of the named file, or of standard input for '-'."""
    try:
        return sys.stdin.read() if name == STDIN else Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise UnreadableFileError(f"cannot read: {reason}") from error
