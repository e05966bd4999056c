"""Hostile-input regression suite: each probe of the attacker review, as a test."""
