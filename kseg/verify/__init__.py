"""Checks that return findings (never print), index rebuild, repair plans and their application."""
