"""Writes the trace of the engine's inputs and decisions (`--record-trace FILE`).

Off by default. The lines (`muster.scheduler.state.trace`) are written as they happen, on
the event loop, each whole and flushed, so a reader never waits for a buffer and a
killed operator leaves at most one line unfinished. The file is started afresh by
each start of the operator: a trace is one operator's life, from its first list.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import IO

from muster.api.wire import JsonObject
from muster.scheduler import EngineConfig, start_line


class TraceFile:
    """One operator's trace, in one file."""

    def __init__(self, path: Path, config: EngineConfig) -> None:
        self.file: IO[str] = path.open("w", encoding="utf-8")
        self.write(start_line(config))

    def write(self, line: JsonObject) -> None:
        self.file.write(json.dumps({**line, "at": time.time()}, separators=(",", ":")) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()
