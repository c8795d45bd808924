"""The compiled kernel or the pure-Python core, for the hot loops: the one place that imports
``kseg._kernel`` (built from kernel/ by ``pip install .`` when a Rust toolchain is there).

``KSEG_KERNEL=rust`` forces the kernel (an error when it is not built), ``KSEG_KERNEL=python``
the pure-Python core; unset (or ``auto``): the kernel when it imports, else Python.

The kernel only does the common case, exactly as the core does it, and says where it stopped:
every rule and every error message stays in kseg.format. The splices that join the two live
beside their callers, so a caller sees the core's contract (same values, same CorruptionError
at the same position) whichever runs: the header walk in kseg.storage.kernel_walk, JSON lines
in kseg.dump.kernel_json, Arrow columns in kseg.spark.kernel_arrow. This module only decides
which runs (``kseg --version`` imports it: it stays small).
"""

from __future__ import annotations

import os

from kseg.format.errors import KsegError

ENV = "KSEG_KERNEL"
RUST = "rust"
PYTHON = "python"

# the range of the kernel's i64 arguments: a bound outside it takes the core's path
I64 = (-(1 << 63), (1 << 63) - 1)

_UNSET = object()
_module = _UNSET


class KernelUnavailable(KsegError):
    """KSEG_KERNEL asks for something that is not there (or is not a known choice): the
    user's setting, so a command exits 16 with this one line (kseg.outcome: a usage mistake)."""

    kind = "usage"  # kseg.outcome: a command reports it in one line and exits 16


def _load():
    choice = os.environ.get(ENV, "").strip().lower()
    if choice == PYTHON:
        return None
    if choice not in ("", "auto", RUST):
        raise KernelUnavailable(f"{ENV}={choice!r} is not one of: rust, python, auto")
    try:
        from kseg import _kernel
    except ImportError as exc:
        if choice == RUST:
            raise KernelUnavailable(
                f"{ENV}=rust but the compiled kernel is not built ({exc}): reinstall kseg with a "
                "Rust toolchain on PATH (pip install .), or unset KSEG_KERNEL to use pure Python"
            ) from None
        return None
    return _kernel


def compiled():
    """The compiled module, or None when the pure-Python core is active (decided once)."""
    global _module
    if _module is _UNSET:
        _module = _load()
    return _module


def reset() -> None:
    """Decide again from the environment (tests switch KSEG_KERNEL)."""
    global _module
    _module = _UNSET


def active() -> str:
    """ "rust" or "python": which implementation runs the hot loops."""
    return PYTHON if compiled() is None else RUST


def describe() -> str:
    """One line for ``kseg --version``: which kernel is active and why."""
    k = compiled()
    if k is not None:
        return f"kernel: rust (kseg._kernel {k.VERSION})"
    if os.environ.get(ENV, "").strip().lower() == PYTHON:
        return f"kernel: python ({ENV}=python)"
    return "kernel: python (the compiled kernel is not built)"


def lines_type() -> type | None:
    """The type of the lines a JsonRecords ``run`` returns (``kseg._kernel.Lines``: ``len``,
    ``bytes(lines)``, and ``write_stdout()``, which writes them to descriptor 1 from the
    kernel's buffer and empties them), or None while no kernel is loaded: none can exist then,
    so this never loads it (nor decides KSEG_KERNEL) itself. Here, not in kseg.dump.kernel_json
    beside what makes them: render asks it for every command's JSON, and asking must load
    neither the kernel nor dump."""
    k = _module
    return None if k is _UNSET or k is None else k.Lines
