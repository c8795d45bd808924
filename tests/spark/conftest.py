from __future__ import annotations

import os
import shutil

import pytest

pyspark = pytest.importorskip("pyspark", reason="Spark tests need the spark extra")
if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
    pytest.skip("Spark tests need a Java runtime (17+)", allow_module_level=True)


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for every Spark test, tuned for speed: UI off, few shuffle
    partitions, quiet logs."""
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
