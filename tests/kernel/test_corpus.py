"""The committed fuzz corpus through the fuzz target once (the bounded fuzz run is a script)."""

from __future__ import annotations

from .fuzz import CORPUS, one_input


def test_corpus(k):
    files = sorted(CORPUS.iterdir())
    assert len(files) >= 5
    for f in files:
        one_input(f.read_bytes())
