"""`kseg stats --plot FILE`: a PNG or SVG beside the rows, through the real entry point; without
matplotlib one line and exit 8 before any work."""

from __future__ import annotations

import shutil
import struct

import pytest

from ..helpers import events, run_kseg

pytest.importorskip("matplotlib", reason="--plot needs the plot extra (pip install 'kseg[plot]')")


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_png_and_svg_beside_the_same_rows(tree, tmp_path):
    plain = run_kseg("stats", tree, "-f", "json")
    png = run_kseg("stats", tree, "-f", "json", "--uncompressed", "--plot", tmp_path / "s.png")
    assert png.returncode == 0, png.stderr
    assert png.stderr.decode() == f"kseg: wrote {tmp_path / 's.png'}\n"
    w, h = _png_size((tmp_path / "s.png").read_bytes())
    assert w >= 1000 and h >= 800
    # the rows are the same with or without the picture (apart from what --uncompressed adds)
    strip = lambda evs: [  # noqa: E731
        {k: v for k, v in e.items() if k not in ("uncompressed_bytes", "compression_ratio")}
        for e in evs
    ]
    assert strip(events(png.stdout)) == strip(events(plain.stdout))
    svg = run_kseg("stats", tree, "--plot", tmp_path / "s.svg")
    assert svg.returncode == 0
    text = (tmp_path / "s.svg").read_text()
    assert "<svg" in text and "offsets over time per partition" in text


def test_a_damaged_copy_is_drawn_with_where_counting_stopped(corrupt_cases, tmp_path):
    case = next(c for c in corrupt_cases if c.kind == "crc_mismatch")
    pdir = shutil.copytree(case.partition_dir, tmp_path / case.partition_dir.name)
    r = run_kseg("stats", pdir, "--plot", tmp_path / "bad.svg")
    assert r.returncode == 4
    assert f"byte {case.position}".encode() in r.stderr
    assert f"{case.file.name} byte {case.position}" in (tmp_path / "bad.svg").read_text()


def test_unwritable_plot_is_8_after_the_rows(tree, tmp_path):
    r = run_kseg("stats", tree, "--plot", tmp_path / "no-such-dir" / "s.png")
    assert r.returncode == 8
    assert r.stdout  # the rows were shown
    assert b"cannot write the plot" in r.stderr and len(r.stderr.splitlines()) == 1


def test_without_matplotlib_one_line_and_8_before_any_work(tree, tmp_path):
    hide = tmp_path / "hide"
    (hide / "matplotlib").mkdir(parents=True)
    (hide / "matplotlib" / "__init__.py").write_text("raise ImportError('hidden for a test')\n")
    import os

    # the hiding dir first, then the kseg under test (a worktree's PYTHONPATH, if any)
    path = os.pathsep.join(filter(None, (str(hide), os.environ.get("PYTHONPATH"))))
    env = {**os.environ, "PYTHONPATH": path}
    r = run_kseg("stats", tree, "--plot", tmp_path / "s.png", env=env)
    assert r.returncode == 8
    assert r.stdout == b""
    assert r.stderr.decode().splitlines() == [
        "kseg: --plot needs matplotlib: pip install 'kseg[plot]' (hidden for a test)"
    ]
    assert not (tmp_path / "s.png").exists()
    # and stats without --plot does not care
    assert run_kseg("stats", tree, env=env).returncode == 0
