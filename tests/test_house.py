"""The house (DESIGN.md): an import graph of kseg, every import at any depth in a file (lazy
ones included), has no cycle and only downward arrows between layers, and no module outside
kseg.cli imports kseg.cli. Read from the sources with ast, so a test of it can fail on a file
no test imports."""

from __future__ import annotations

import ast
from pathlib import Path

import kseg

PKG = Path(kseg.__file__).parent

# layer of each top-level name under kseg (a package or a module); an arrow may point to the
# same layer (siblings, still no cycle) or lower
LAYERS = {
    "format": 0,
    "outcome": 0,
    "events": 0,
    "version": 1,  # names the kernel that decodes
    "kernel": 1,  # the compiled kernel's splice: beside storage, over format
    "storage": 1,
    **dict.fromkeys(
        (
            "dump",
            "seek",
            "offsets",
            "stats",
            "verify",
            "repair",
            "index",
            "salvage",
            "txn",
            "replicas",
            "schemas",
        ),
        2,
    ),
    "fixtures": 2,  # writes example trees (and corrupt copies) with storage's writer
    "render": 3,
    "spark": 3,
    "cli": 4,
    "__main__": 5,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PKG.rglob("*.py")}


def lazy_exports() -> dict[str, str]:
    """kseg's names imported on first use (PEP 562): ``from kseg import LogWriter`` imports
    kseg.storage.writer."""
    for node in ast.parse((PKG / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_EXPORTS":
            return ast.literal_eval(node.value)
    raise AssertionError("kseg/__init__.py: no _EXPORTS")


def imports(path: Path, known: set[str], own: str = "") -> set[str]:
    """The kseg modules a file imports: ``from a.b import c`` is a.b.c where that is a module,
    else a.b; ``from kseg import X`` of a lazy name is X's module; a string naming a kseg module
    is imported by name in a file that calls importlib.import_module; importing a.b.c runs a.b's ``__init__`` too
    (unless a.b is a package of ``own``, the importing module: then it is running already).
    Relative imports are refused (kseg imports absolutely)."""
    found = set()
    lazy = lazy_exports()
    tree = ast.parse(path.read_text())
    by_name = any(  # a file that imports by name: its strings naming modules are its imports
        isinstance(n, ast.Attribute) and n.attr == "import_module" for n in ast.walk(tree)
    )
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert not node.level, f"{path}: relative import"
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if node.module == "kseg" and alias.name in lazy:
                    sub = lazy[alias.name]
                found.add(sub if sub in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif by_name and isinstance(node, ast.Constant) and node.value in known:
            found.add(node.value)
    parents = {m.rsplit(".", k)[0] for m in found for k in range(1, m.count(".") + 1)}
    parents = {p for p in parents if not own.startswith(p + ".")}
    return {m for m in found | parents if m == "kseg" or m.startswith("kseg.")}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {m: {d for d in imports(p, known, m) if d != m and d in known} for m, p in mods.items()}


def top(mod: str) -> str:
    return mod.split(".")[1] if "." in mod else ""


def test_every_top_level_name_has_a_layer():
    assert sorted({top(m) for m in modules()} - {""} - set(LAYERS)) == []


def test_imports_point_down_only():
    edges = graph()
    assert ("kseg.storage.segment", "kseg.format.errors") in {
        (a, b) for a in edges for b in edges[a]
    }
    upward = sorted(
        f"{a} -> {b}"
        for a, deps in edges.items()
        for b in deps
        if top(a) and top(b) and LAYERS[top(b)] > LAYERS[top(a)]
    )
    assert upward == []


def test_nothing_outside_cli_imports_cli():
    bad = sorted(
        f"{a} -> {b}"
        for a, deps in graph().items()
        for b in deps
        if top(b) == "cli" and top(a) not in ("cli", "__main__")
    )
    assert bad == []


def test_no_import_cycle():
    _assert_acyclic(graph())


def test_no_import_cycle_between_packages():
    """Folders named for their job stay one-way too: no two packages (verify and repair, say)
    import each other, even through modules that form no module cycle."""
    packages: dict[str, set[str]] = {}
    for a, deps in graph().items():
        if top(a):
            packages.setdefault(f"kseg.{top(a)}", set()).update(
                f"kseg.{top(b)}" for b in deps if top(b) and top(b) != top(a)
            )
    assert "kseg.verify" in packages["kseg.repair"]  # the graph is read (this test can fail)
    _assert_acyclic(packages)


def test_the_graph_sees_lazy_by_name_and_parent_imports(tmp_path):
    """A lazy ``from kseg import X`` is X's module, a string naming a module is imported by
    name (importlib), and importing a module runs its package's ``__init__``."""
    known = set(modules())
    src = tmp_path / "m.py"
    src.write_text(
        "import importlib\n"
        "from kseg import LogWriter\n"
        "from kseg.render.fields import x\n"
        "importlib.import_module('kseg.format.coordinator')\n"
    )
    assert imports(src, known) == {
        "kseg",
        "kseg.storage",
        "kseg.storage.writer",
        "kseg.render",
        "kseg.render.fields",
        "kseg.format",
        "kseg.format.coordinator",
    }


def _assert_acyclic(edges: dict[str, set[str]]) -> None:
    state: dict[str, int] = {}
    cycles = []

    def visit(mod: str, path: list[str]) -> None:
        state[mod] = 1
        for dep in sorted(edges.get(mod, ())):
            if dep == "kseg":
                continue  # the package's __init__ (version, lazy attributes)
            if state.get(dep) == 1:
                cycles.append(
                    " -> ".join([*path[path.index(dep) :], mod, dep])
                    if dep in path
                    else f"{mod} -> {dep}"
                )
            elif not state.get(dep):
                visit(dep, [*path, mod])
        state[mod] = 2

    for mod in sorted(edges):
        if not state.get(mod):
            visit(mod, [])
    assert cycles == []
