"""How Muster's cost grows with the cluster and with the gangs waiting in its queue."""
