"""The engine's live picture: objects taken in as records, node capacity as arrays,
placed pods indexed, the static predicates per node."""
