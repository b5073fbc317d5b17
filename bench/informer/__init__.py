"""Memory and CPU of keeping 50,000 pods in step."""
