"""Gangs preferring one rack, else one block, else one zone: the engine's placement cost."""
