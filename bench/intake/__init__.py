"""Intake at scale: how fast gang Jobs submitted at once are expanded and told."""
