"""The local control plane: build Kubernetes from Go modules and run it on loopback."""
