"""What `kseg --version` reports."""

from __future__ import annotations


def kernel() -> str:
    """The implementation of the hot loops (CRC walk, record decoding). Today always "python";
    a compiled kernel, when one is added, reports its own name here (e.g. "rust")."""
    return "python"


def version_line() -> str:
    from . import __version__

    return f"kseg {__version__} (kernel: {kernel()})"
