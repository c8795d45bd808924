"""Write the command reference (docs/reference/*.md) and the man page (docs/man/kseg.1) from
each command's ``--help``, as the installed kseg prints it at a fixed width.

    python tools/reference.py          # write them
    python tools/reference.py --check  # exit 1 (and name the files) where they differ

tests/docs/test_reference.py runs the check: a change to an option's help that is not carried
into the docs fails the tests (the sqlite-utils/cog idea), so the reference cannot drift."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
MAN = ROOT / "docs" / "man" / "kseg.1"
WIDTH = 88  # columns of the help text (click wraps to this)


def commands() -> list[tuple[tuple[str, ...], str]]:
    """(path, help text) of the top level and every command and group, in the order
    ``kseg --help`` lists them."""
    import typer

    from kseg.cli.app import app

    root = typer.main.get_command(app)

    def context(cmd, name, parent):
        return cmd.context_class(
            cmd, info_name=name, parent=parent, terminal_width=WIDTH, max_content_width=WIDTH
        )

    out = []

    def walk(cmd, path, parent):
        ctx = context(cmd, path[-1] if path else "kseg", parent)
        out.append((path, cmd.get_help(ctx)))
        if hasattr(cmd, "list_commands"):  # a group (typer may vendor its own click)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), (*path, name), ctx)

    walk(root, (), None)
    return out


def _page_name(path: tuple[str, ...]) -> str:
    return "index.md" if not path else "-".join(path) + ".md"


def reference_pages() -> dict[str, str]:
    """File name -> content of every reference page."""
    found = commands()
    pages: dict[str, str] = {}
    (_, top), rest = found[0], found[1:]
    links = "\n".join(f"- [`kseg {' '.join(p)}`]({_page_name(p)})" for p, _ in rest)
    pages["index.md"] = (
        "# Command reference\n\n"
        "Generated from each command's `--help` by `tools/reference.py` (the tests check that it\n"
        "matches what kseg prints). The guides say what each command does and why; this is the\n"
        "exact grammar.\n\n"
        f"```text\n$ kseg --help\n{top}```\n\n{links}\n"
    )
    for path, text in rest:
        name = " ".join(path)
        pages[_page_name(path)] = f"# kseg {name}\n\n```text\n$ kseg {name} --help\n{text}```\n"
    return pages


def _roff(text: str) -> str:
    """Preformatted help text as roff: backslashes and leading dots/quotes escaped."""
    lines = []
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def man_page() -> str:
    """kseg(1): the top-level help, then every command's, preformatted."""
    import kseg

    found = commands()
    (_, top), rest = found[0], found[1:]
    parts = [
        f'.TH KSEG 1 "" "kseg {kseg.__version__}" "User Commands"',
        ".SH NAME",
        "kseg \\- inspect, verify and repair Apache Kafka log segments on disk",
        ".SH SYNOPSIS",
        ".B kseg",
        "\\fICOMMAND\\fR [\\fIOPTIONS\\fR] \\fIPATH\\fR...",
        ".SH DESCRIPTION",
        ".nf",
        _roff(top),
        ".fi",
        ".SH COMMANDS",
    ]
    for path, text in rest:
        parts += [f".SS kseg {' '.join(path)}", ".nf", _roff(text), ".fi"]
    parts += [
        ".SH SEE ALSO",
        "The guides, runbooks and the contract for scripts: the docs/ folder of kseg's source,",
        "or its site built with mkdocs.",
    ]
    return "\n".join(parts) + "\n"


def expected() -> dict[Path, str]:
    files = {REFERENCE / name: text for name, text in reference_pages().items()}
    files[MAN] = man_page()
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, write nothing")
    args = ap.parse_args()
    files = expected()
    if args.check:
        stale = [p for p, text in files.items() if not p.is_file() or p.read_text() != text]
        stale += [p for p in REFERENCE.glob("*.md") if p not in files]
        for p in stale:
            print(f"{p.relative_to(ROOT)}: differs from --help (run python tools/reference.py)")
        return 1 if stale else 0
    for p in REFERENCE.glob("*.md"):
        if p not in files:
            p.unlink()
    for p, text in files.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
