"""One Spark driver JVM (on the one worker that runs these tests: the "spark-cli" group in
tests/conftest.py), which `kseg spark ...` subprocesses attach to instead of
starting their own: the way spark-submit runs kseg (its JVM first, then Python attached to it
through PYSPARK_GATEWAY_PORT/SECRET), so the CLI runs its real code path end to end.

Why: a `kseg spark` subprocess that starts its own JVM costs 20-30 s on a loaded 2-core machine,
most of it the JVM's start and its first Spark context; attached, 5-10 s. Tests about the JVM's
own start (its stderr under `-q`, where Python workers run, a JVM that cannot start) keep
starting their own (tests/helpers.run_kseg); every other CLI test of Spark uses ``spark_cli``.

What differs from a JVM of its own, and why it does not matter for the tests that attach:
the JVM's working directory and environment are the test worker's (Python workers inherit
them): a test that gives the subprocess its own ``cwd`` or ``env`` runs with its own JVM. The
JVM's log lines go to a file here, not to the subprocess's stderr. After each run the context
the run left behind is stopped (the CLI leaves it to the JVM's exit, as under spark-submit), so
the next run starts its own, with its own master and configuration.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.helpers import run_kseg

QUIET_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n%ex
"""


class SparkGateway:
    """A Spark driver JVM (pyspark's gateway, no context in it until a run makes one)."""

    def __init__(self, workdir: Path):
        from pyspark import SparkConf
        from pyspark.java_gateway import launch_gateway

        self.workdir = workdir
        self.log = workdir / "jvm.log"
        log4j = workdir / "log4j2.properties"
        log4j.write_text(QUIET_LOG4J2.format(log=self.log))
        saved = os.environ.get("SPARK_SUBMIT_OPTS")
        opts = f"{saved or ''} -Dlog4j2.configurationFile=file:{log4j}".strip()
        os.environ["SPARK_SUBMIT_OPTS"] = opts  # read by launch_gateway's spark-submit only
        try:
            conf = SparkConf().set("spark.driver.memory", "768m")
            out = open(workdir / "jvm.out", "wb")  # noqa: SIM115 - the JVM holds it
            self._gateway = launch_gateway(conf, {"stdout": out, "stderr": subprocess.STDOUT})
            out.close()
        finally:
            if saved is None:
                os.environ.pop("SPARK_SUBMIT_OPTS", None)
            else:
                os.environ["SPARK_SUBMIT_OPTS"] = saved
        params = self._gateway.gateway_parameters
        self.env_vars = {
            "PYSPARK_GATEWAY_PORT": str(params.port),
            "PYSPARK_GATEWAY_SECRET": params.auth_token,
        }

    def env(self) -> dict[str, str]:
        """The environment of a subprocess that attaches to this JVM."""
        return {**os.environ, **self.env_vars}

    def run(self, *args, input: bytes | None = None, timeout: float = 300):
        """tests.helpers.run_kseg, attached to this JVM; its context is stopped afterwards."""
        try:
            return run_kseg(*args, input=input, timeout=timeout, env=self.env())
        finally:
            self.reset()

    def reset(self) -> None:
        """Stop what a run left in the JVM (its SparkSession and SparkContext), so the next
        run creates its own."""
        jvm = self._gateway.jvm
        session = jvm.org.apache.spark.sql.SparkSession
        for found in (session.getDefaultSession(), session.getActiveSession()):
            if found.isDefined():
                found.get().stop()
        session.clearDefaultSession()
        session.clearActiveSession()
        # SparkContext.getActive has no static forwarder: call it on the Scala object
        scala_object = jvm.java.lang.Class.forName("org.apache.spark.SparkContext$")
        context = scala_object.getField("MODULE$").get(None).getActive()
        if context.isDefined():  # a run that ended before its session was made
            context.get().stop()

    def close(self) -> None:
        proc = self._gateway.proc
        try:
            self._gateway.shutdown()
        finally:
            if proc is not None:
                proc.stdin.close()  # the JVM ends when its stdin does
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
