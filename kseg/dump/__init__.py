"""Turning parsed structures into what a person or a script reads."""
