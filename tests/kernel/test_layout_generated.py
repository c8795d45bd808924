"""kernel/src/layout.rs is generated from kseg.format's declaration of the v2 batch (field list,
attribute bits, codec names) by kernel/gen_layout.py: regenerated here in memory, it must equal
the checked-in file, so the Rust kernel never reads a layout the Python core does not declare."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "kernel" / "gen_layout.py"
LAYOUT = ROOT / "kernel" / "src" / "layout.rs"


@pytest.fixture(scope="module")
def gen():
    if not GENERATOR.exists():  # an installed kseg without its source tree
        pytest.skip("kernel/gen_layout.py is not here")
    spec = importlib.util.spec_from_file_location("kseg_gen_layout", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_layout_rs_is_generated_from_the_declaration(gen):
    assert LAYOUT.read_text() == gen.render(), (
        f"{LAYOUT.relative_to(ROOT)} differs from kseg.format's declaration: "
        f"regenerate with `{gen.COMMAND}` (then rebuild the kernel)"
    )


def test_layout_rs_says_it_is_generated(gen):
    head = LAYOUT.read_text().splitlines()[:4]
    assert any("Do not edit" in line for line in head)
    assert any(gen.COMMAND in line for line in head)


def test_the_generator_reads_only_the_format_declaration():
    found = set()
    for node in ast.walk(ast.parse(GENERATOR.read_text())):
        if isinstance(node, ast.ImportFrom):
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    kseg = sorted(n for n in found if n.split(".")[0] == "kseg")
    assert kseg and all(n.startswith("kseg.format.") for n in kseg), kseg


def test_every_header_field_and_bit_is_declared_in_rust(gen):
    """The Rust side has a constant for every field position and bit the declaration has."""
    from kseg.format import batch

    text = LAYOUT.read_text()
    for name, _ in batch._FIELDS:
        assert f"pub const {name.upper()}_POS: usize = {batch.FIELD_POS[name]};" in text
        assert f"    pub {name}: " in text  # a field of the one Header struct
    for name in ("ATTR_COMPRESSION", "ATTR_TIMESTAMP_TYPE", "ATTR_TRANSACTIONAL", "ATTR_CONTROL"):
        assert f"pub const {name}: i16 = 0x{getattr(batch, name):02X};" in text


def test_the_rust_kernel_reads_no_header_offset_as_a_literal():
    """Every kernel source but the generated one takes header positions from layout.rs."""
    import re

    literal = re.compile(r"\bpos\s*\+\s*\d+\b|\bbe_i(16|32|64)\(")
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted((ROOT / "kernel" / "src").glob("*.rs"))
        if path.name != "layout.rs"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if literal.search(line)
    ]
    assert found == []
