"""KSEG_KERNEL chooses the implementation; a forced kernel that is not built is a clear error."""

from __future__ import annotations

import pytest

from kseg import kernel
from kseg.dump import kernel_json
from kseg.format.batch import build_batch
from kseg.format.record import Record
from kseg.storage import kernel_walk

from .diff import kernel_built


def test_python_forced(choose):
    choose("python")
    assert kernel.active() == "python"
    assert kernel.compiled() is None
    assert kernel.describe() == "kernel: python (KSEG_KERNEL=python)"
    buf = build_batch([Record(b"k", b"v", 5, [], 0)], 0)
    assert (
        kernel_json.batch_json(buf, 0, b'"f"', "base64") is None
    )  # the caller takes the core's path
    assert [r[0] for r in kernel_walk.walk_headers(buf)] == [0]


def test_rust_forced_but_not_built(choose):
    choose("rust", built=False)
    with pytest.raises(kernel.KernelUnavailable, match="KSEG_KERNEL=rust but the compiled kernel"):
        kernel.active()


def test_default_falls_back_when_not_built(choose):
    choose(None, built=False)
    assert kernel.active() == "python"
    assert kernel.describe() == "kernel: python (the compiled kernel is not built)"


def test_unknown_choice(choose):
    choose("fortran")
    with pytest.raises(kernel.KernelUnavailable, match="not one of"):
        kernel.active()


@pytest.mark.skipif(not kernel_built(), reason="the compiled kernel is not built")
def test_default_is_rust_when_built(choose):
    choose(None)
    assert kernel.active() == "rust"
    assert kernel.describe().startswith("kernel: rust (kseg._kernel ")
    choose("RUST")
    assert kernel.active() == "rust"


def test_walk_blocks_same_either_way(choose, tree):
    """walk_blocks packs the same rows with the kernel and without it (when it is built)."""
    logs = sorted(tree.rglob("*.log"))
    choose("python")
    expected = [b"".join(kernel_walk.walk_blocks(p.read_bytes())) for p in logs]
    if not kernel_built():
        pytest.skip("the compiled kernel is not built")
    choose("rust")
    assert [b"".join(kernel_walk.walk_blocks(p.read_bytes())) for p in logs] == expected


def test_walk_blocks_across_windows(choose, tree, monkeypatch):
    """Batches that cross the kernel's per-call window are handed to the core and the walk goes
    on: the same rows as the core's walk, with windows far smaller than a batch."""
    if not kernel_built():
        pytest.skip("the compiled kernel is not built")
    logs = sorted(tree.rglob("*.log"))
    choose("python")
    expected = [b"".join(kernel_walk.walk_blocks(p.read_bytes())) for p in logs]
    choose("rust")
    for window, chunk in ((1000, 2), (100, 4096), (70_000, 1)):
        monkeypatch.setattr(kernel_walk, "WINDOW", window)
        monkeypatch.setattr(kernel_walk, "CHUNK_BATCHES", chunk)
        assert [b"".join(kernel_walk.walk_blocks(p.read_bytes())) for p in logs] == expected
