"""The distributions (tools/build_wheel.py): the abi3 wheel installs into a fresh environment
with no cargo on PATH and runs on the compiled kernel, with the man page beside it; the sdist
installs there as pure Python (no cargo: nothing to build) and says which kernel runs.

Each fresh environment is a venv without pip whose only dependencies are this one's (a .pth
line: its site-packages, whose own .pth files, such as the editable kseg's, are not read), and
this environment's pip installs into it, offline."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import kseg

ROOT = Path(__file__).resolve().parents[2]
# one worker builds once for the module's tests (two builds of one tree at once collide)
pytestmark = pytest.mark.xdist_group("packaging")
NO_CARGO = {**os.environ, "PATH": "/usr/bin:/bin"}
for _name in ("PYTHONPATH", "KSEG_KERNEL"):  # (CI runs the suite with KSEG_KERNEL set)
    NO_CARGO.pop(_name, None)


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    if shutil.which("cargo") is None:
        pytest.skip("no cargo on PATH: the wheel's kernel cannot be built here")
    from tools.build_wheel import build

    out = tmp_path_factory.mktemp("dist")
    source = tmp_path_factory.mktemp("source") / "kseg"
    skip = shutil.ignore_patterns(".git", ".venv", "build", "dist", "site", "target", "*.egg-info",
                                  "__pycache__", "*.so", ".hypothesis", ".pytest_cache")  # fmt: skip
    shutil.copytree(ROOT, source, ignore=skip)  # a checkout of its own: see tools/build_wheel
    made = build(out, source=source)
    wheels = [p for p in made if p.suffix == ".whl"]
    sdists = [p for p in made if p.name.endswith(".tar.gz")]
    assert len(wheels) == 1 and len(sdists) == 1, made
    return {"wheel": wheels[0], "sdist": sdists[0]}


def _fresh_env(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _install(python: Path, dist: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
         "--no-index", "--no-build-isolation", str(dist)],
        capture_output=True, env=NO_CARGO, timeout=600,
    )  # fmt: skip


def _kseg(python: Path, *args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python.with_name("kseg")), *args], capture_output=True, cwd=cwd, env=NO_CARGO,
        timeout=120,
    )  # fmt: skip


def test_the_wheel_is_abi3_manylinux_and_runs_the_kernel_without_cargo(dists, tmp_path):
    wheel = dists["wheel"]
    assert f"-{kseg.__version__}-cp311-abi3-" in wheel.name and "manylinux" in wheel.name
    python = _fresh_env(tmp_path / "env")
    proc = _install(python, wheel)
    assert proc.returncode == 0, proc.stderr.decode()
    version = _kseg(python, "--version", cwd=tmp_path)
    expected = f"kseg {kseg.__version__}; kernel: rust (kseg._kernel {kseg.__version__})\n"
    assert version.stdout.decode() == expected, version.stderr
    demo = _kseg(python, "demo", "demo", cwd=tmp_path)
    assert demo.returncode == 0 and demo.stdout, demo.stderr
    verify = _kseg(python, "verify", "demo", cwd=tmp_path)
    assert verify.returncode == 0, verify.stderr
    where = subprocess.run(
        [str(python), "-c", "import kseg, kseg._kernel; print(kseg.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, env=NO_CARGO,
    )  # fmt: skip
    assert where.stdout.startswith(str(tmp_path / "env")), where  # not this checkout's kseg
    assert (tmp_path / "env" / "share" / "man" / "man1" / "kseg.1").is_file()


def test_the_sdist_installs_as_pure_python_without_cargo(dists, tmp_path):
    python = _fresh_env(tmp_path / "env")
    proc = _install(python, dists["sdist"])
    assert proc.returncode == 0, proc.stderr.decode()
    version = _kseg(python, "--version", cwd=tmp_path)
    assert version.stdout.decode() == (
        f"kseg {kseg.__version__}; kernel: python (the compiled kernel is not built)\n"
    )
    demo = _kseg(python, "demo", "demo", cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr


def test_one_version_in_one_place():
    """kseg/__init__.py's __version__: pyproject reads it, the kernel is built with it."""
    text = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text and 'attr = "kseg.__version__"' in text
    assert 'version = "0.0.0"' in (ROOT / "kernel" / "Cargo.toml").read_text()
    from importlib.metadata import version

    assert version("kseg") == kseg.__version__
