"""Talking to the API server: a thin JSON client, list-then-watch, retries and a rate limit."""
