"""What the operator keeps in memory at the scale point, part by part."""
