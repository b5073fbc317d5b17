"""What a cycle decides, as frozen values: the plan the operator carries out and the
results it reports."""
