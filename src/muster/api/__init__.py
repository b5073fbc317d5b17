"""PodGroup and Workload: models, CRD schemas, validation rules, Job opt-in. Pure."""
