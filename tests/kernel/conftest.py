from __future__ import annotations

import sys

import pytest

from kseg import kernel

from .diff import kernel_built


@pytest.fixture
def k(monkeypatch):
    """The compiled module, with KSEG_KERNEL=rust for kseg.kernel (skips when not built)."""
    if not kernel_built():
        pytest.skip("the compiled kernel (kseg._kernel) is not built: pip install . with cargo")
    from kseg import _kernel

    monkeypatch.setenv("KSEG_KERNEL", "rust")
    kernel.reset()
    yield _kernel
    kernel.reset()


@pytest.fixture
def choose(monkeypatch):
    """set_choice(value, built=True): KSEG_KERNEL=value (None: unset) for kseg.kernel; with
    built=False the compiled module cannot be imported."""

    def set_choice(value: str | None, *, built: bool = True):
        if value is None:
            monkeypatch.delenv("KSEG_KERNEL", raising=False)
        else:
            monkeypatch.setenv("KSEG_KERNEL", value)
        if not built:
            monkeypatch.setitem(sys.modules, "kseg._kernel", None)  # import fails
            # and the package attribute an earlier import left must not answer it instead
            monkeypatch.delattr(sys.modules["kseg"], "_kernel", raising=False)
        kernel.reset()

    yield set_choice
    kernel.reset()


@pytest.fixture(autouse=True)
def _decided_afresh():
    """Set up first, so torn down last: after monkeypatch has put KSEG_KERNEL and
    sys.modules back, the choice is forgotten, so no test leaves one decided under its patches
    to the tests after it (tests/cli's --version saw "not built" when run after these)."""
    yield
    kernel.reset()
