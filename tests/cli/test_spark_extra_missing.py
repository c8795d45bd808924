"""`kseg spark ...` where the spark extra is not installed: one line naming the install
command, exit 8, not "internal error: ModuleNotFoundError" (found by an operator probe)."""

from __future__ import annotations

import os

import pytest

from tests.helpers import run_kseg


@pytest.fixture()
def without(tmp_path):
    """An environment in which importing the named packages fails, as on a machine that
    installed kseg without its spark extra (a sitecustomize blocks them)."""

    def env(*modules: str) -> dict:
        site = tmp_path / "site"
        site.mkdir(exist_ok=True)
        blocked = "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
        (site / "sitecustomize.py").write_text("import sys\n" + blocked)
        # the blocking site first, then the kseg under test (a worktree's PYTHONPATH, if any)
        path = os.pathsep.join(filter(None, (str(site), os.environ.get("PYTHONPATH"))))
        return {**os.environ, "PYTHONPATH": path}

    return env


@pytest.mark.parametrize("missing", [("pyspark",), ("pyarrow",)])
@pytest.mark.parametrize(
    "command", [("verify",), ("stats",), ("export", "--out", "OUT")], ids=lambda c: c[0]
)
def test_spark_without_the_extra_says_how_to_install_it(tree, tmp_path, without, missing, command):
    args = [str(tmp_path / "out") if a == "OUT" else a for a in command]
    proc = run_kseg("spark", *args[:1], tree / "orders-0", *args[1:], env=without(*missing))
    err = proc.stderr.decode()
    assert proc.returncode == 8, err
    assert proc.stdout == b""
    assert err.count("\n") == 1, err
    assert err.startswith("kseg: Spark support needs the spark extra: pip install 'kseg[spark]'")
    assert missing[0] in err
    assert not (tmp_path / "out").exists()
