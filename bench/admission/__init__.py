"""Admission load against the leader's Lease renewals (`make bench-admission`)."""
