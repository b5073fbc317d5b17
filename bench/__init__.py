"""Benchmarks of Muster and their results (never run by `make test`)."""
