"""The house rules storage/ stands for: a segment's files are opened in one place, and storage
imports only downwards (format <- storage <- {decode, verify, lookup} <- {cli, spark})."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import kseg

PACKAGE = Path(kseg.__file__).parent


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), path.read_text()


def test_index_views_and_segment_names_only_in_storage_and_format():
    opening = re.compile(r"\b(OffsetIndex|TimeIndex)\(|name\[:20\]|\bmap_file\(")
    found = sorted(
        rel
        for rel, text in _sources()
        if opening.search(text) and not rel.startswith(("storage/", "format/"))
    )
    assert found == []
    # within storage, the index opener is called by storage/segment.py only
    in_storage = sorted(
        rel
        for rel, text in _sources()
        if rel.startswith("storage/") and re.search(r"(?<!def )\bmap_file\(", text)
    )
    assert in_storage == ["storage/segment.py"]


# kseg/kernel.py (which kernel runs: the compiled one or the core) sits beside format: it imports
# only format, and Segment's walk (storage/kernel_walk.py, the walk's splice) uses it
LEVEL_OF_FORMAT = ("format", "kernel")


def _kseg_imports(text: str) -> list[str]:
    """Every kseg module or name a source imports (kseg imports absolutely), at any depth."""
    found = []
    for node in ast.walk(ast.parse(text)):
        assert not (isinstance(node, ast.ImportFrom) and node.level), "a relative import"
        if isinstance(node, ast.ImportFrom):
            found += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names]
    return [name for name in found if name.startswith("kseg.")]


def test_storage_imports_only_format_and_storage():
    upward = []
    for rel, text in _sources():
        if rel.startswith("storage/"):
            upward += [
                (rel, name)
                for name in _kseg_imports(text)
                if name.split(".")[1] not in (*LEVEL_OF_FORMAT, "storage")
            ]
    assert upward == []
    assert "kseg.format.errors.CorruptionError" in _kseg_imports(
        (PACKAGE / "storage" / "segment.py").read_text()
    )  # it sees imports


def test_kernel_splice_imports_only_format():
    """kseg/kernel.py may be imported by storage: it must not import upwards itself."""
    found = [
        name
        for name in _kseg_imports((PACKAGE / "kernel.py").read_text())
        if name.split(".")[1] not in ("format", "_kernel")
    ]
    assert found == []


# the splices of the kernel and the core, each beside its callers; all of them over format and
# the kernel's choice only (the JSON and Arrow ones also over the walk's)
SPLICES = {
    "storage/kernel_walk.py": ("kseg.format", "kseg.kernel"),
    "dump/kernel_json.py": ("kseg.format", "kseg.kernel", "kseg.storage.kernel_walk"),
    "spark/kernel_arrow.py": ("kseg.format", "kseg.kernel", "kseg.storage.kernel_walk"),
}


@pytest.mark.parametrize("rel", sorted(SPLICES))
def test_kernel_splices_import_only_format_and_the_choice(rel):
    allowed = SPLICES[rel]
    names = _kseg_imports((PACKAGE / rel).read_text())
    assert "kseg.kernel" in names  # it sees imports
    found = [n for n in names if not any(n == a or n.startswith(a + ".") for a in allowed)]
    assert found == []
