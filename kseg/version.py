"""What `kseg --version` reports."""

from __future__ import annotations


def version_line() -> str:
    """``kseg <version>; kernel: rust|python (why)``: which implementation runs the hot loops
    (kseg.kernel: the compiled kernel, or the pure-Python core)."""
    from kseg import __version__
    from kseg.kernel import KernelUnavailable, describe

    try:
        kernel = describe()
    except KernelUnavailable as exc:  # KSEG_KERNEL asks for what is not there
        kernel = f"kernel: unavailable ({exc})"
    return f"kseg {__version__}; {kernel}"
