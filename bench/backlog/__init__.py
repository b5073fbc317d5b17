"""What a backlog that cannot move costs the engine's cycles."""
