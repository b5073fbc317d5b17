"""The engine's live picture: objects taken in as records through one door (`kinds`),
node capacity as arrays, placed pods indexed, the static predicates per node; and the
trace of what went in and what each cycle decided."""
