"""Admission webhooks: reject invalid objects early, gate member pods at creation."""
