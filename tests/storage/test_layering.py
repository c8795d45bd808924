"""The house rules storage/ stands for: a segment's files are opened in one place, and storage
imports only downwards (format <- storage <- {decode, verify, lookup} <- {cli, spark})."""

from __future__ import annotations

import ast
import re
from pathlib import Path

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


# kseg/kernel.py (the compiled kernel's splice) sits beside format: it imports only format, and
# Segment's walk uses it
LEVEL_OF_FORMAT = ("format", "kernel")


def test_storage_imports_only_format_and_storage():
    upward = []
    for rel, text in _sources():
        if not rel.startswith("storage/"):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.level:
                target = (node.module or "").split(".")[0]
                if node.level == 2 and target not in (*LEVEL_OF_FORMAT, ""):
                    upward.append((rel, node.module))
                if node.level == 2 and target == "" and node.names:
                    upward += [(rel, a.name) for a in node.names if a.name not in LEVEL_OF_FORMAT]
            elif isinstance(node, ast.Import):
                upward += [(rel, a.name) for a in node.names if a.name.startswith("kseg.")]
    assert upward == []


def test_kernel_splice_imports_only_format():
    """kseg/kernel.py may be imported by storage: it must not import upwards itself."""
    tree = ast.parse((PACKAGE / "kernel.py").read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            target = (node.module or "").split(".")[0]
            if target == "":
                found += [a.name for a in node.names if a.name != "_kernel"]
            elif target != "format":
                found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("kseg")]
    assert found == []
