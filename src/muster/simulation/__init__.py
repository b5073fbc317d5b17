"""Offline what-if: run the engine over Kubernetes YAML until nothing changes. Pure."""
