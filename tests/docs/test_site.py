"""The documentation: the site builds strictly (every link and anchor resolves, every page is in
the nav), the command reference and the man page are what `--help` prints (tools/reference.py),
the man page renders, and the README keeps its promises (two set-up commands, links that
resolve, a tour that runs as written)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import kseg_command, run_kseg

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_the_site_builds_strictly(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert (tmp_path / "site" / "reference" / "dump" / "index.html").is_file()


def test_every_page_is_in_the_nav():
    """mkdocs only warns about a page left out of the nav when told to (omitted_files): the
    nav is also checked here, so the strict build's check cannot be switched off unseen."""
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    listed = set(re.findall(r":\s+(\S+\.md)\s*$", nav, re.M))
    generated = {p for p in pages if p.startswith("reference/") and p != "reference/index.md"}
    assert pages - generated == listed
    assert "omitted_files: warn" in nav and "strict: true" in nav


def test_reference_and_man_page_are_what_help_prints():
    from tools import reference

    stale = [
        str(p.relative_to(ROOT))
        for p, text in reference.expected().items()
        if not p.is_file() or p.read_text() != text
    ]
    assert not stale, f"{stale}: run python tools/reference.py"
    listed = {p.name for p in reference.REFERENCE.glob("*.md")}
    assert listed == set(reference.reference_pages())  # no page of a command that is gone


def test_the_reference_covers_every_command():
    from tools import reference

    pages = reference.reference_pages()
    top = run_kseg("--help").stdout.decode()
    for name in re.findall(r"^  (\w+) ", top.split("Commands:", 1)[1], re.M):
        assert f"{name}.md" in pages, name
    assert {"index-check.md", "index-rebuild.md", "spark-export.md"} <= set(pages)


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_the_man_page_renders_without_warnings():
    page = ROOT / "docs" / "man" / "kseg.1"
    proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
    if shutil.which("man"):
        out = subprocess.run(
            ["man", "-l", str(page)],
            capture_output=True,
            env={"MANWIDTH": "100", "PATH": "/usr/bin:/bin"},
        )
        text = out.stdout.decode()
        assert out.returncode == 0 and "kseg dump" in text and "EXIT" not in out.stderr.decode()


def test_readme_has_exactly_two_set_up_commands():
    section = README.read_text().split("## Set up", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [x for x in block.splitlines() if x.strip() and not x.startswith("#")]
    assert len(commands) == 2
    assert commands[0].endswith(".venv/bin/kseg demo")
    assert commands[1].endswith(".venv/bin/python -m pytest -q")


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [x for x in links if "://" not in x]
    assert len(local) > 20
    missing = [x for x in local if not (ROOT / x).exists()]
    assert not missing


def test_the_readme_tour_runs_as_written(tmp_path):
    """The tour's commands, each with the exit code its comment says (0 unless it says 4)."""
    block = README.read_text().split("## A tour on the demo", 1)[1].split("```sh\n", 1)[1]
    lines = [x for x in block.split("```", 1)[0].splitlines() if x.strip()]
    assert len(lines) >= 10
    kseg = " ".join(kseg_command())
    subprocess.run(f"{kseg} demo > /dev/null", shell=True, cwd=tmp_path, check=True, timeout=120)
    for line in lines:
        command = re.sub(r"(^|; |&& )kseg ", rf"\g<1>{kseg} ", line.split("  #", 1)[0])
        proc = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=120
        )
        four = "exit 4" in line
        if "echo $?" in line:  # the command's own status is printed; bash's is echo's
            assert proc.returncode == 0 and proc.stdout.endswith(b"4\n" if four else b"0\n"), line
        else:
            assert proc.returncode == (4 if four else 0), (line, proc.stderr.decode())
        ran_kseg = line.startswith("kseg ")
        assert (proc.stdout or not ran_kseg) and b"Traceback" not in proc.stderr, line


def test_the_site_shows_the_readme_s_tour():
    """The home page carries the README's tour (a site reader never sees the README)."""
    tour = README.read_text().split("## A tour on the demo\n", 1)[1].split("\n## ", 1)[0]
    home = (ROOT / "docs" / "index.md").read_text()
    assert tour.strip() in home
