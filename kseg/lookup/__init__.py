"""Seeking by offset and by timestamp; time-expression parsing."""
