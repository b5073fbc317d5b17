"""The dashboard's page at the engine benchmark's size."""
