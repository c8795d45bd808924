"""The suite runs on every core (pytest-xdist, pyproject.toml's addopts) and the tests that share
a session's JVM or server run on one worker: a small suite with tests/conftest.py's grouping hook,
run the same way as a subprocess, starts each shared fixture once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist", reason="the parallel run needs pytest-xdist (the test extra)")

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = """
import os
import pytest
from tests.conftest import pytest_collection_modifyitems  # the project's grouping hook

def _started(name, tmp_path_factory):
    with open(os.environ["STARTED"], "a") as f:
        f.write(f"{name} {os.environ.get('PYTEST_XDIST_WORKER')}\\n")

@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    _started("spark", tmp_path_factory)

@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    _started("s3", tmp_path_factory)

@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    _started("kafka_broker", tmp_path_factory)

@pytest.fixture(scope="session")
def uses_s3(s3):  # a fixture of a fixture: grouped as well
    return s3
"""

TESTS = """
import pytest

@pytest.mark.parametrize("i", range(4))
def test_spark(spark, i):
    pass

@pytest.mark.parametrize("i", range(4))
def test_s3(uses_s3, i):
    pass

@pytest.mark.parametrize("i", range(3))
def test_broker(kafka_broker, i):
    pass

@pytest.mark.parametrize("i", range(12))
def test_other(i):
    pass
"""


def test_the_readme_command_runs_on_every_core():
    (line,) = [
        x for x in (ROOT / "pyproject.toml").read_text().splitlines() if x.startswith("addopts")
    ]
    assert "-n auto" in line and "--dist loadgroup" in line


def test_tests_sharing_a_session_service_run_on_one_worker_which_starts_it_once(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "test_mini.py").write_text(TESTS)
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, STARTED=str(tmp_path / "started.txt"))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
         "-v", "--basetemp", str(tmp_path / "base"), "-c", os.devnull, "--rootdir", str(suite),
         str(suite)],
        capture_output=True, text=True, timeout=300, env=env, cwd=suite,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "23 passed" in proc.stdout, proc.stdout[-3000:]
    workers: dict[str, set[str]] = {}
    for line in proc.stdout.splitlines():
        if "PASSED" in line and line.startswith("[gw"):
            name = line.split("::")[1].split("[")[0]
            workers.setdefault(name, set()).add(line.split("]")[0][1:])
    assert len(workers["test_spark"] | workers["test_s3"]) == 1, workers  # one group: "spark"
    assert len(workers["test_broker"]) == 1, workers
    started = (tmp_path / "started.txt").read_text().split("\n")[:-1]
    assert sorted(s.split()[0] for s in started) == ["kafka_broker", "s3", "spark"], started
