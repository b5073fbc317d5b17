"""The engine's plan carried out in order: pods released, status written, events emitted."""
