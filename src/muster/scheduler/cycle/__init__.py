"""One scheduling cycle: the queue in order over one consistent view."""
