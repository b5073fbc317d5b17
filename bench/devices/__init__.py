"""A gang claiming GPUs through Dynamic Resource Allocation, at cluster size."""
