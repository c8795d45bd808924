"""kseg on Apache Spark (optional extra: ``pip install 'kseg[spark]'``).

    spark = kseg.spark.session()                     # local[*], kseg source registered
    df = spark.read.format("kseg").load("/data/kafka-logs")
    kseg.spark.export(spark, ["/data/kafka-logs"], "/out/records")
    findings, summary = kseg.spark.verify(spark, ["/data/kafka-logs"])

Nothing else in kseg imports this package, so pyspark stays optional.
"""

from kseg.spark.jobs import export, read, read_map_in_arrow, register, session, stats, verify

__all__ = ["export", "read", "read_map_in_arrow", "register", "session", "stats", "verify"]
