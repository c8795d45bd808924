"""Imports point one way (DESIGN.md): the library never imports the render layer or the CLI,
the render layer never the CLI, kseg.spark never the CLI (its spark-submit entry point is the
CLI's: kseg/cli/spark_submit.py)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "kseg"
# every command-line module (kseg/cli/: the typer app, the commands, their options, the process
# around them and the spark-submit entry point)
CLI = {"kseg.cli"}


def _imports(path: Path) -> set[str]:
    """Every kseg module a file imports (relative imports resolved), at any depth in the file."""
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("kseg")}


def _modules(sub: str) -> list[Path]:
    return sorted((PKG / sub).rglob("*.py")) if (PKG / sub).is_dir() else [PKG / f"{sub}.py"]


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        ("format", CLI | {"kseg.render"}),
        ("storage", CLI | {"kseg.render"}),
        ("dump", CLI | {"kseg.render"}),
        ("verify", CLI | {"kseg.render"}),
        ("repair", CLI | {"kseg.render"}),
        ("index", CLI | {"kseg.render"}),
        ("seek", CLI | {"kseg.render"}),
        ("offsets", CLI | {"kseg.render"}),
        ("stats", CLI | {"kseg.render"}),
        ("txn", CLI | {"kseg.render"}),
        ("replicas", CLI | {"kseg.render"}),
        ("render", CLI),
        ("spark", CLI),
        ("outcome", CLI | {"kseg.render"}),
        ("events", CLI | {"kseg.render"}),
    ],
)
def test_imports_point_one_way(layer, forbidden):
    assert {p.stem for p in (PKG / "cli").glob("*.py")} >= {"app", "entry", "options", "exit"}
    assert not list(PKG.glob("cli*.py")) and not (PKG / "entry.py").exists()  # all in kseg/cli/
    for path in _modules(layer):
        bad = {m for m in _imports(path) if any(m == f or m.startswith(f + ".") for f in forbidden)}
        assert not bad, f"{path.relative_to(PKG.parent)} imports {sorted(bad)}"


def test_spark_submit_entry_point_runs_as_a_file(tmp_path):
    """spark-submit runs kseg/cli/spark_submit.py as a script (README): it parses `kseg spark`
    options and checks the inputs before any JVM starts (nothing Kafka here: one line, 16)."""
    script = PKG / "cli" / "spark_submit.py"
    proc = subprocess.run(
        [sys.executable, str(script), "stats", str(tmp_path)],
        capture_output=True,
        timeout=120,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 16, err
    assert err.count("\n") == 1 and err.startswith(f"kseg: {tmp_path}: no Kafka"), err
