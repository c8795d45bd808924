from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

from kseg.fixtures import build_corrupt_tree, build_tree
from kseg.fixtures.kafka07 import build_kafka07_tree

# Property tests run the same examples on every run (CI must not go red on a new random draw;
# a found counterexample is kept as an explicit example). HYPOTHESIS_PROFILE=explore draws new
# examples each run, to hunt for bugs locally.
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

REAL = Path(__file__).resolve().parents[2] / "shared" / "real"

# Every JVM the tests start (Spark's launcher, driver, standalone master and workers; the Kafka
# brokers and tools in tests/broker.py) lives seconds and reads little: the client compiler only
# and the serial collector halve the CPU each start costs (a `kseg spark stats` subprocess: 37 s
# of CPU -> 18 s), which on two cores is the suite's critical path. Set here, before any worker
# or subprocess starts, so every JVM of the session inherits them; nothing they print changes
# (unlike JAVA_TOOL_OPTIONS, which the JVM announces on stderr).
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
for _name in ("SPARK_SUBMIT_OPTS", "SPARK_LAUNCHER_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
    if FAST_JVM not in os.environ.get(_name, ""):
        os.environ[_name] = f"{os.environ.get(_name, '')} {FAST_JVM}".strip()


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # once, in the controller (or the only process)
        _compile_kseg()
        _share_spark_classes(config)


def _compile_kseg() -> None:
    """kseg's bytecode, written once before the tests start the CLI a thousand times: under
    PYTHONDONTWRITEBYTECODE (set on some machines and CI images) an editable install would
    otherwise compile every module it imports on every start (~0.1 s of CPU per kseg
    subprocess). compileall writes it whatever that variable says; Python reads it back."""
    import compileall

    import kseg

    compileall.compile_dir(Path(kseg.__file__).parent, quiet=2, workers=1)


def _share_spark_classes(config) -> None:
    """Class data sharing for the Spark driver JVMs (each `kseg spark ...` subprocess, the
    session fixture's, spark-submit's): one such JVM, started in the background now, writes the
    classes it loaded to an archive at its exit (-XX:ArchiveClassesAtExit); every Spark driver
    JVM started after it is in place maps it instead of loading and verifying thousands of
    classes again (a `kseg spark stats` start: 18 s of CPU -> 13 s). Until then, or should it
    not match (another classpath), a JVM runs as without it; -Xlog:cds*=off keeps the JVM's
    notes about the archive off stdout and stderr. The archive is written under another name
    and renamed, so no JVM maps half of it. KSEG_TEST_SHARED_CLASSES=0: no archive."""
    import signal
    import subprocess
    import sys
    import tempfile
    import threading

    if shutil.which("java") is None or os.environ.get("KSEG_TEST_SHARED_CLASSES") == "0":
        return
    spark_tests = Path(__file__).parent / "spark"
    given = [Path(config.rootpath, a.split("::")[0]).resolve() for a in config.args]
    if not any(spark_tests.is_relative_to(g) or g.is_relative_to(spark_tests) for g in given):
        return  # no Spark test folder in this run: not worth a JVM
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return
    work = Path(tempfile.mkdtemp(prefix="kseg-tests-cds-"))
    archive = work / "spark.jsa"
    opts = os.environ["SPARK_SUBMIT_OPTS"]
    dump_env = {**os.environ, "SPARK_SUBMIT_OPTS": f"{opts} -XX:ArchiveClassesAtExit={work}/tmp.jsa"
                " -Xlog:cds*=off"}  # fmt: skip
    os.environ["SPARK_SUBMIT_OPTS"] = f"{opts} -XX:SharedArchiveFile={archive} -Xlog:cds*=off"
    from kseg.fixtures.tree import build_txn

    root = work / "logs"
    build_txn(root / "txn-0")
    argv = [sys.executable, "-m", "kseg", "spark", "stats", str(root), "-f", "json", "-q"]
    argv += ["--master", "local[1]", "--conf", "spark.ui.enabled=false"]

    proc = subprocess.Popen(argv, env=dump_env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip

    def publish() -> None:
        if proc.wait() == 0 and (work / "tmp.jsa").is_file():
            (work / "tmp.jsa").rename(archive)

    def cleanup() -> None:
        if proc.poll() is None:  # a short run ended first: the dump (and its JVM) are not needed
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)

    threading.Thread(target=publish, name="kseg-tests-cds", daemon=True).start()
    config.add_cleanup(cleanup)


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: a worker more than the cores. Part of the suite waits (on a JVM's start, a
    broker's, a subprocess's), and an extra worker runs then; more only adds contention. On the
    2-core VM (2026-11-29): 3 workers 15:02 a pass, 4 workers 16:04 (the CPUs busy 93% of the
    run); 2 workers 17:53, measured before the same day's other savings."""
    from kseg.storage.jobs import cores

    return cores() + 1


# The suite runs in parallel (pytest-xdist, `-n auto --dist loadgroup` in pyproject.toml). A test
# that uses one of these session fixtures (a JVM or server started once per worker that asks for
# it) joins that fixture's xdist group, so one worker runs them all and starts it once; every
# other test goes to whichever worker is free. A new test using them is grouped the same way.
SHARED_SERVICES = {
    "kafka_broker": "kafka-broker",  # a real Kafka broker (a JVM, 5-30 s to start)
    "spark": "spark",  # the local SparkSession (a JVM) and the moto S3 server it reads
    "s3": "spark",
    "cluster": "spark",  # a standalone Spark cluster (three JVMs) beside the S3 server
    # the Spark JVM `kseg spark` subprocesses attach to (tests/spark_gateway.py): its start
    # and first contexts (JIT warm-up, 30-40 s of CPU) paid once, not once per worker
    "spark_cli": "spark-cli",
}


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    for item in items:  # first, before xdist's own hook reads the groups
        names = getattr(item, "fixturenames", ())
        used = [SHARED_SERVICES[f] for f in names if f in SHARED_SERVICES]
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if used:
            item.add_marker(pytest.mark.xdist_group(used[0]))
        elif "kafka_home" in names:
            # a module's brokers are set up by its module-scoped fixtures (a broker serving
            # the module's data): its tests on one worker, or each worker starts them again
            item.add_marker(pytest.mark.xdist_group(f"kafka-{item.module.__name__}"))
    yield
    if getattr(config.option, "loadgroup", False):  # last, in each xdist worker
        _carry_xdist_groups(items)


def _carry_xdist_groups(items) -> None:
    """xdist's worker tells the controller an item's group by a '@group' suffix that it writes
    into the item's legacy ``_nodeid``; pytest 9.2 keeps the id in ``_id`` (a NodeId), so the
    suffix is lost and every group is spread over the workers (pytest-xdist issue #1386). Write
    it where this pytest reads it; nothing to do where xdist's own suffix arrived."""
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})  # fmt: skip
        suffix = "@" + "_".join(names)
        if not names or item.nodeid.endswith(suffix):
            continue
        node_id = getattr(item, "_id", None)
        if node_id is not None and hasattr(type(node_id), "parse"):
            item._id = type(node_id).parse(item.nodeid + suffix)
        else:
            item._nodeid = item.nodeid + suffix


@pytest.fixture(scope="session")
def tree(tmp_path_factory) -> Path:
    """The clean fixture log.dirs tree (read-only for tests: copy before changing)."""
    return build_tree(tmp_path_factory.mktemp("fixtures") / "logs")


@pytest.fixture(scope="session")
def tree_with_bootstrap(tmp_path_factory) -> Path:
    """The clean fixture tree plus a root ``bootstrap.checkpoint`` (records of no topic, whose
    values name the topics `orders` and `txn`): read-only for tests."""
    from kseg.fixtures.tree import write_bootstrap_checkpoint

    root = build_tree(tmp_path_factory.mktemp("bootstrapped") / "logs")
    write_bootstrap_checkpoint(root, ("orders", "txn"))
    return root


@pytest.fixture(scope="session")
def log07(tmp_path_factory) -> Path:
    """A Kafka 0.7 log dir written by Log07Writer (read-only for tests: copy before changing)."""
    return build_kafka07_tree(tmp_path_factory.mktemp("k07") / "logs")


@pytest.fixture(scope="session")
def corrupt_cases(tmp_path_factory):
    return build_corrupt_tree(tmp_path_factory.mktemp("corrupt"))


@pytest.fixture(scope="session")
def kafka_home(tmp_path_factory) -> Path:
    """A real Apache Kafka 4.1.0 (../shared/kafka), unpacked once per session: tests/broker.py."""
    from tests.broker import KAFKA_TGZ, unpack_kafka

    if not KAFKA_TGZ.is_file():
        pytest.skip(
            "../shared/kafka (a real Kafka 4.1.0 to check against) is not beside the project"
        )
    if shutil.which("java") is None:
        pytest.skip("no java on PATH to run the real Kafka 4.1.0 broker")
    return unpack_kafka(tmp_path_factory.mktemp("kafka"))


@pytest.fixture(scope="session")
def kafka_broker(kafka_home, tmp_path_factory):
    """One running broker for the whole session, for tool oracles (kafka-consumer-groups,
    kafka-get-offsets, ...): tests create the topics they need (unique names)."""
    from tests.broker import Broker

    broker = Broker(kafka_home, tmp_path_factory.mktemp("broker")).start()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def real_root() -> Path:
    if not REAL.is_dir():
        pytest.skip("shared/real (real broker data) is not beside the project")
    return REAL


@pytest.fixture(scope="session")
def damage_segments(tmp_path_factory) -> dict:
    """The small one-segment partitions to damage (kseg.fixtures.segments), written once:
    {name: (partition dir, segment bytes, original entries, after_offset)}. Read-only."""
    from kseg.fixtures.segments import build_segments
    from kseg.fixtures.truth import original_entries

    out = {}
    for name, pdir in build_segments(tmp_path_factory.mktemp("damage")).items():
        log = next(pdir.glob("*.log"))
        data = log.read_bytes()
        out[name] = (pdir, data, original_entries(data), int(log.stem) - 1)
    return out


@pytest.fixture(scope="session")
def spark_cli(tmp_path_factory):
    """A Spark driver JVM (the session's one: its tests share a worker, SHARED_SERVICES) that
    `kseg spark ...` subprocesses attach to (tests/spark_gateway.py): ``spark_cli.run(*args)``
    is run_kseg for Spark commands without a JVM start each. Skips where the spark extra or
    Java is missing."""
    pytest.importorskip("pyspark", reason="Spark tests need the spark extra")
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.skip("Spark tests need a Java runtime (17+)")
    from tests.spark_gateway import SparkGateway

    gateway = SparkGateway(tmp_path_factory.mktemp("spark-gateway"))
    yield gateway
    gateway.close()
