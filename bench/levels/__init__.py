"""Preferred topology levels end to end: Muster beside Kueue's topology-aware scheduling."""
