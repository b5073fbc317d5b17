"""What the webhooks of every replica rely on: the certificate, PriorityClasses and Workloads."""
