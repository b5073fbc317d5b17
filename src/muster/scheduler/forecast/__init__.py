"""When each waiting gang will start: the engine's own cycles run forward in time, and
which estimates are worth writing."""
