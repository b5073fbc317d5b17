"""`muster simulate` over a dump of a large cluster."""
