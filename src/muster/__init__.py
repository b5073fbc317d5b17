"""Muster: all-or-nothing gang scheduling for Kubernetes."""
