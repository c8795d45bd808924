from __future__ import annotations

import os
import shutil

import pytest

pyspark = pytest.importorskip("pyspark", reason="Spark tests need the spark extra")
if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
    pytest.skip("Spark tests need a Java runtime (17+)", allow_module_level=True)


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """An S3 API server (moto) on 127.0.0.1 for the session; its endpoint and fake credentials
    are in os.environ (the AWS chain pyarrow reads) before any Spark JVM or Python worker starts,
    so every Spark session and subprocess of the tests can read s3:// URIs from it."""
    from tests.spark.services import start_s3

    server = start_s3(tmp_path_factory.mktemp("s3"))
    saved = {k: os.environ.get(k) for k in server.env}
    os.environ.update(server.env)
    yield server
    server.service.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def cluster(s3, tmp_path_factory):
    """A standalone Spark cluster (master + two one-core workers, separate JVMs) on 127.0.0.1,
    started once, stopped by PID."""
    from tests.spark.services import start_cluster

    c = start_cluster(tmp_path_factory.mktemp("cluster"), s3.env)
    yield c
    c.service.stop()


@pytest.fixture(scope="session")
def spark(s3):
    """One local SparkSession for every Spark test, tuned for speed: UI off, few shuffle
    partitions, quiet logs. Started after the S3 server, whose endpoint its workers inherit."""
    import kseg.spark

    session = kseg.spark.session(
        "local[2,2]",  # a failed task is retried once (the export commit tests need it)
        {
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.session.timeZone": "UTC",
            "spark.driver.memory": "1g",
        },
    )
    yield session
    session.stop()
