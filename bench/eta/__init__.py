"""How accurate start-time estimates are against the starts the engine gave later."""
