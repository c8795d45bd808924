from __future__ import annotations

import pytest

from .diff import kernel_built


@pytest.fixture
def k(monkeypatch):
    """The compiled module, with KSEG_KERNEL=rust for kseg.kernel (skips when not built)."""
    if not kernel_built():
        pytest.skip("the compiled kernel (kseg._kernel) is not built: pip install . with cargo")
    from kseg import _kernel, kernel

    monkeypatch.setenv("KSEG_KERNEL", "rust")
    kernel.reset()
    yield _kernel
    kernel.reset()
