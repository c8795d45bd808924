"""The Python workers Spark starts, as an operator meets them: the interpreter they run (a
relative PYSPARK_PYTHON, the README's standalone recipe, means nothing in an executor's working
directory), the kseg they import (never a `kseg/` in the working directory), and what a Spark
failure looks like (one line naming its cause, exit 8; the JVM's trace only with KSEG_DEBUG=1).
The cluster side of the same rules is in test_s3_cluster.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from kseg.spark import jobs
from kseg.spark.failure import summarize
from tests.helpers import events, run_kseg

pytestmark = pytest.mark.spark

SPARK = ("-q", "--master", "local[1]", "--conf", "spark.ui.enabled=false")


@pytest.fixture(scope="module")
def small_root(tree, tmp_path_factory):
    root = tmp_path_factory.mktemp("workers") / "logs"
    root.mkdir()
    shutil.copytree(tree / "txn-0", root / "txn-0")
    return root


def _env(**changes: str) -> dict[str, str]:
    """This environment without KSEG_DEBUG, with ``changes``."""
    return {**{k: v for k, v in os.environ.items() if k != "KSEG_DEBUG"}, **changes}


# -- the workers' interpreter ---------------------------------------------------------------


@pytest.fixture
def clean_python_env(monkeypatch):
    """_worker_python sets PYSPARK_PYTHON: restored after the test (setenv records it)."""
    for name in ("PYSPARK_PYTHON", "PYSPARK_GATEWAY_PORT"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    return monkeypatch


def test_a_relative_worker_python_is_made_absolute(clean_python_env, tmp_path):
    """`PYSPARK_PYTHON=.venv/bin/python` (the README's recipe): executors start in their own
    working directory, so the path is resolved against ours before Spark starts; not through
    symlinks (a venv's python is one, and only its own path finds the venv)."""
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)
    clean_python_env.chdir(tmp_path)
    clean_python_env.setenv("PYSPARK_PYTHON", ".venv/bin/python")
    jobs._worker_python("spark://127.0.0.1:7077", {})
    assert os.environ["PYSPARK_PYTHON"] == str(tmp_path / ".venv" / "bin" / "python")
    # spark.pyspark.python wins over PYSPARK_PYTHON, as in Spark
    jobs._worker_python("local[1]", {"spark.pyspark.python": "./.venv/bin/python"})
    assert os.environ["PYSPARK_PYTHON"] == str(tmp_path / ".venv" / "bin" / "python")


def test_a_worker_python_in_a_shipped_archive_stays_relative(clean_python_env, tmp_path):
    """`--archives kseg-env.tar.gz#env --conf spark.pyspark.python=./env/bin/python` (the
    README's YARN recipe): the archive is unpacked in each executor's directory."""
    clean_python_env.chdir(tmp_path)
    for conf in (
        {"spark.archives": "hdfs:///envs/kseg-env.tar.gz#env"},
        {"spark.yarn.dist.archives": "other.zip,kseg-env.tar.gz#env"},
    ):
        jobs._worker_python("yarn", {"spark.pyspark.python": "./env/bin/python", **conf})
        assert os.environ["PYSPARK_PYTHON"] == "./env/bin/python"
    jobs._worker_python("yarn", {"spark.pyspark.python": "env/bin/python", "spark.archives": "env"})
    assert os.environ["PYSPARK_PYTHON"] == "env/bin/python"  # no '#': the file's own name
    # an absolute path and a name looked up on each node's PATH are the operator's to give
    for value in ("/opt/python/bin/python3", "python3"):
        jobs._worker_python("yarn", {"spark.pyspark.python": value})
        assert os.environ["PYSPARK_PYTHON"] == value


@pytest.mark.parametrize(
    ("env", "conf", "said"),
    [
        ({"PYSPARK_PYTHON": ".venv/bin/python"}, (), "PYSPARK_PYTHON=.venv/bin/python"),
        ({}, ("--conf", "spark.pyspark.python=env/bin/python"), "spark.pyspark.python="),
    ],
)
def test_a_relative_worker_python_that_is_not_there_is_refused(
    small_root, tmp_path, env, conf, said
):
    """Before Spark starts: one line naming the variable and the absolute path looked at, exit
    16 (it used to start Spark and fail in every executor with a 10 KB line, exit 8)."""
    proc = run_kseg(
        "spark", "stats", small_root, *SPARK, *conf, cwd=tmp_path, env=_env(**env), timeout=120
    )
    err = proc.stderr.decode()
    assert proc.returncode == 16, err
    assert err.count("\n") == 1 and err.startswith(f"kseg: {said}"), err
    assert f"no executable file at {tmp_path}{os.sep}" in err and proc.stdout == b""


# -- a Spark failure ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def python_without_kseg(tmp_path_factory):
    """A Python of its own (a fresh venv): kseg and its codecs are not installed in it."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return venv / "bin" / "python"


def test_a_spark_failure_is_one_line_naming_its_cause(small_root, python_without_kseg):
    """Python workers that cannot import kseg (or its codecs): exit 8 and one line, `kseg: Spark
    failed: ...` naming the missing module and the interpreter (it used to be the JVM's whole
    stack trace as one 'line', called an internal error). KSEG_DEBUG=1 prints the trace first
    (the JVM's frames included) and then the same line."""
    env = _env(PYSPARK_PYTHON=str(python_without_kseg))
    proc = run_kseg("spark", "stats", small_root, *SPARK, env=env, timeout=300)
    err = proc.stderr.decode()
    assert proc.returncode == 8, err
    assert err.count("\n") == 1 and err.startswith("kseg: Spark failed: "), err
    assert "No module named" in err and str(python_without_kseg) in err
    assert len(err) < 500 and "Traceback" not in err and "\\n" not in err, err
    debug = run_kseg(
        "spark", "stats", small_root, *SPARK, env={**env, "KSEG_DEBUG": "1"}, timeout=300
    )
    trace = debug.stderr.decode()
    assert debug.returncode == 8, trace
    assert "Traceback" in trace and "\tat org.apache.spark." in trace
    assert trace.splitlines()[-1] == err.rstrip("\n")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (  # an executor could not start its Python worker (py4j's Py4JJavaError)
            "An error occurred while calling o42.collectToPython.\n: org.apache.spark."
            "SparkException: Job aborted due to stage failure: Task 1 in stage 0.0 failed 4 "
            "times, most recent failure: Lost task 1.3 in stage 0.0 (TID 7) (127.0.0.1 executor"
            ' 1): java.io.IOException: Cannot run program ".venv/bin/python": error=2, No such '
            "file or directory\n\tat java.base/java.lang.ProcessBuilder.start(ProcessBuilder.jav"
            "a:1143)\nCaused by: java.io.IOException: error=2, No such file or directory\n\t..."
            " 33 more\n\nDriver stacktrace:\n\tat org.apache.spark.scheduler.DAGScheduler.fail"
            "JobAndIndependentStages(DAGScheduler.scala:3000)\n",
            "a task failed 4 times (last on 127.0.0.1 executor 1): IOException: Cannot run "
            'program ".venv/bin/python": error=2, No such file or directory',
        ),
        (  # the data source's planning, in a Python worker on the driver (AnalysisException)
            "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: Traceback "
            '(most recent call last):\n  File "/x/pyspark/serializers.py", line 483, in loads\n'
            "    return cloudpickle.loads(obj, encoding=encoding)\n           ^^^^^^^^^\n"
            "ModuleNotFoundError: No module named 'kseg'\n SQLSTATE: 38000",
            "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: "
            "ModuleNotFoundError: No module named 'kseg'",
        ),
        (  # a task's Python code raised (PythonException inside a job abort)
            "An error occurred while calling o9.collectToPython.\n: org.apache.spark.SparkExcept"
            "ion: Job aborted due to stage failure: Task 0 in stage 1.0 failed 1 times, most "
            "recent failure: Lost task 0.0 in stage 1.0 (TID 1) (localhost executor driver): org."
            "apache.spark.api.python.PythonException: Traceback (most recent call last):\n  File"
            ' "w.py", line 1, in read\nOSError: [Errno 28] No space left on device\n\n\tat org.'
            "apache.spark.api.python.BasePythonRunner.read(PythonRunner.scala:1)\n",
            "a task failed 1 time (last on localhost executor driver): OSError: [Errno 28] No "
            "space left on device",
        ),
        (  # a message that ends in a colon: its first cause
            "An error occurred while calling o1.load.\n: org.apache.spark.SparkException: "
            "Exception thrown in awaitResult: \n\tat a.b(C.java:1)\nCaused by: java.io.FileNotF"
            "oundException: /data/x (Permission denied)\nCaused by: java.lang.Error: deeper\n",
            "Exception thrown in awaitResult: FileNotFoundException: /data/x (Permission denied)",
        ),
        (  # the JVM did not start (PySparkRuntimeError)
            "[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number.",
            "[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number.",
        ),
    ],
)
def test_the_cause_of_a_spark_error(text, line):
    """The cause, from the shapes pyspark's errors take (texts as Spark 4 writes them)."""
    assert summarize(text) == line


# -- the kseg the workers import -------------------------------------------------------------


@pytest.mark.skipif(sys.version_info < (3, 11), reason="PYTHONSAFEPATH is Python 3.11's")
def test_workers_import_the_installed_kseg_whatever_the_working_directory(small_root, tmp_path):
    """Run from a directory holding a `kseg/` that is not the installed one (a checkout's parent,
    another version): Spark starts its Python workers with `python -m`, which put that directory
    first on sys.path, and the data source's planning imported it (exit 8, ImportError). They
    start with PYTHONSAFEPATH=1 now: the job runs and counts the same rows."""
    (tmp_path / "kseg").mkdir()
    (tmp_path / "kseg" / "__init__.py").write_text('raise ImportError("not the installed kseg")\n')
    proc = run_kseg(
        "spark", "stats", small_root, "-f", "json", *SPARK, cwd=tmp_path, env=_env(), timeout=300
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == b""
    (row,) = events(proc.stdout)
    assert (row["topic"], row["partition"]) == ("txn", 0) and row["records"] > 0
