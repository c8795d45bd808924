"""The jobs behind `kseg spark ...`, callable from Python and by spark-submit."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kseg.outcome import combined


class NoInput(ValueError):
    """The inputs hold nothing to read (no partition dir, or no segment): never an empty
    success, and never a Spark job planned over nothing."""

    kind = "nothing_found"  # a usage mistake (kseg.outcome)


def check_inputs(
    paths: list[str], topic: str | None = None, *, records: bool = False, segments: bool = True
) -> list[str]:
    """Classify the inputs before Spark starts (seconds): a wrong path or regex fails at once
    (InputError, NoInput), with the same rules and exit codes as the local commands. Returns the
    notices for stderr: with ``records`` (the records table has Spark's Kafka schema, no log
    dir), partitions read from several roots."""
    from kseg.spark.planning import Prune, find_partitions
    from kseg.storage.tree import NO_MATCH, InputError

    found = find_partitions(paths, Prune(topic=topic))
    replicas: dict[tuple[str, int], list[str]] = {}
    for _, t, p, log_dir in found:
        replicas.setdefault((t, p), []).append(log_dir)
    several = {tp: dirs for tp, dirs in replicas.items() if len(dirs) > 1}
    notices = []
    if records and several:
        (t, p), dirs = next(iter(several.items()))
        notices.append(
            f"{len(several)} partitions have replicas in several log dirs (e.g. {t}-{p} in "
            f"{', '.join(dirs)}): the records table holds every replica's records; pass one "
            "root per partition to read each record once"
        )
    if not found:
        why = (
            f"no partition matches --topic {topic!r}"
            if topic is not None
            else "no live partition directory to read (only root files, or only -delete/-future/-stray dirs)"
        )
        raise InputError(NO_MATCH, " ".join(paths), why)
    require_input(paths, topic, segments=segments, kafka07=records)
    return notices


def parse_conf(items: list[str] | None) -> dict[str, str]:
    """--conf k=v pairs; anything else is a usage mistake."""
    from kseg.outcome import BadOption

    pairs = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise BadOption(f"expected k=v, got {item!r}", "--conf")
        pairs[key] = value
    return pairs


def require_input(
    paths: list[str], topic: str | None = None, *, segments: bool = True, kafka07: bool = False
) -> None:
    """Raise :class:`NoInput` (one line naming the inputs) when no partition dir (with
    ``segments``: no segment; with ``kafka07``, for the records table, a Kafka 0.7 `.kafka`
    segment counts) is found under ``paths``. Runs on the driver before any Spark job: a
    listing, stopping at the first segment found."""
    from kseg.spark import planning

    parts = planning.find_partitions([str(p) for p in paths], planning.Prune(topic=topic))
    if parts and (
        not segments
        or any(
            planning.has_segment(pdir) or (kafka07 and planning.has_kafka07_segment(pdir))
            for pdir, *_ in parts
        )
    ):
        return
    what = "segment (.log file)" if parts else "partition directory (<topic>-<n>)"
    sel = f" of a topic matching {topic!r}" if topic else ""
    raise NoInput(
        f"{', '.join(str(p) for p in paths)}: no Kafka {what}{sel} found; give a log.dirs root, "
        "a directory of roots or partition directories"
    )


def register(spark) -> None:
    """Register the source, and enable Python filter pushdown (used to prune segments)."""
    from kseg.spark.source import KsegDataSource

    spark.dataSource.register(KsegDataSource)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")


# log4j2 for a quiet JVM: errors only (a warning about the hostname or native Hadoop libraries
# is nothing an operator of kseg can act on)
QUIET_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.filter.threshold.type = ThresholdFilter
appender.stderr.filter.threshold.level = error
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""
# (the root at warn, the shell's default, and errors only through the filter: with another root
# level Spark, started as a pyspark shell, says "Setting default log level to ..." on stderr)


def _quiet_jvm() -> str | None:
    """Before pyspark starts the JVM: point its log4j2 at QUIET_LOG4J2 (through SPARK_SUBMIT_OPTS,
    which Spark's launcher passes to the driver JVM), so that not even its start-up lines
    ("Using Spark's default log4j profile", WARN Utils/NativeCodeLoader) reach stderr. Returns
    the config file to remove once the JVM has read it; None when a JVM already runs
    (spark-submit started us: its own log4j configuration stands)."""
    import tempfile

    from pyspark import SparkContext

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return None
    fd, path = tempfile.mkstemp(prefix="kseg-log4j2-", suffix=".properties")
    with os.fdopen(fd, "w") as f:
        f.write(QUIET_LOG4J2)
    opts = os.environ.get("SPARK_SUBMIT_OPTS", "")
    os.environ["SPARK_SUBMIT_OPTS"] = f"{opts} -Dlog4j2.configurationFile=file:{path}".strip()
    return path


# the one line the JVM itself prints at start (Spark's launcher adds the module): not log4j's
_JVM_NOISE = (b"WARNING: Using incubator modules: jdk.incubator.vector",)


def _start_quiet_gateway(options: dict[str, str]) -> None:
    """Start pyspark's JVM with ``options`` (as the session builder would), its stderr passed
    on line by line by a thread, without the JVM's own start-up warning (_JVM_NOISE). What the
    JVM and the Python workers it starts write there later still reaches stderr."""
    import subprocess
    import threading

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf()
    for key, value in options.items():
        conf.set(key, value)
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    pipe = gateway.proc.stderr

    def forward() -> None:
        out = sys.stderr.buffer
        for line in iter(pipe.readline, b""):
            if line.rstrip() not in _JVM_NOISE:
                out.write(line)
                out.flush()

    threading.Thread(target=forward, name="kseg-jvm-stderr", daemon=True).start()
    SparkContext._ensure_initialized(gateway=gateway)


class BadInterpreter(ValueError):
    """The Python workers' interpreter is a relative path with no executable file behind it: a
    usage mistake, said before any Spark job (executors start elsewhere, where a relative path
    means nothing)."""

    kind = "usage"


_ARCHIVES = ("spark.archives", "spark.yarn.dist.archives")


def _worker_python(master: str | None, conf: dict[str, str]) -> None:
    """Set PYSPARK_PYTHON, the interpreter pyspark gives every Python worker, before the
    SparkContext starts. ``spark.pyspark.python`` (in ``conf``) wins over PYSPARK_PYTHON, as in
    Spark; neither given, local mode and spark-submit run this interpreter. A relative path is
    resolved against the working directory (executors run in their own: as given, it would name
    nothing there), or refused (BadInterpreter) when no executable file is behind it; one
    inside an archive shipped with the job (``--archives env.tar.gz#env`` with
    ``./env/bin/python``) is meant for the executors' directories and stays as it is."""
    name, value = "spark.pyspark.python", conf.get("spark.pyspark.python")
    if not value:
        name, value = "PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON")
    if not value:
        if master is None or master.startswith("local"):
            os.environ["PYSPARK_PYTHON"] = sys.executable
        return
    # an absolute path, or a bare name looked up on each node's PATH, stays as given
    relative = not os.path.isabs(value) and os.sep in value
    if relative and Path(value).parts[0] not in _archive_dirs(conf):
        path = os.path.abspath(value)  # not realpath: a venv's python is a symlink
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise BadInterpreter(
                f"{name}={value}: no executable file at {path} (a relative interpreter path is "
                "taken from the working directory); give the path of a Python that has kseg "
                "installed"
            )
        value = path
    os.environ["PYSPARK_PYTHON"] = value


def _archive_dirs(conf: dict[str, str]) -> set[str]:
    """The directories the job's archives are unpacked into in each executor's working
    directory (``file.tar.gz#dir``, or the file's name), from ``conf`` and, under spark-submit,
    from its configuration."""
    values = [conf[k] for k in _ARCHIVES if conf.get(k)]
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit's JVM holds --archives
        from pyspark import SparkConf, SparkContext

        SparkContext._ensure_initialized()
        submitted = SparkConf()
        values += [v for k in _ARCHIVES if (v := submitted.get(k))]
    dirs = set()
    for value in values:
        for item in filter(None, (i.strip() for i in value.split(","))):
            path, _, alias = item.partition("#")
            dirs.add(alias or path.rstrip("/").rsplit("/", 1)[-1])
    return dirs


def session(
    master: str | None = "local[*]",
    conf: dict[str, str] | None = None,
    app_name: str = "kseg",
    *,
    quiet: bool = False,
):
    """A SparkSession with the kseg source registered. ``master=None`` keeps what spark-submit
    chose. In local mode Python workers must run this interpreter (kseg's native codecs live in
    its environment), so PYSPARK_PYTHON defaults to it; a relative one is made absolute or
    refused (_worker_python). ``quiet``: the JVM logs errors only, from its first line on."""
    from pyspark.sql import SparkSession

    _worker_python(master, conf or {})
    if master is None or master.startswith("local"):
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Spark starts every Python worker (on executors, and on the driver for the data source's
    # planning) as `python -m pyspark.daemon|...`, and `-m` puts the working directory first on
    # sys.path: a `kseg/` there (a checkout's parent, another version) would be imported instead
    # of the installed kseg. PYTHONSAFEPATH (Python >= 3.11) leaves it out; pyspark passes
    # spark.executorEnv.* to every Python worker it starts, in local mode too.
    conf = {"spark.executorEnv.PYTHONSAFEPATH": "1", **(conf or {})}
    log4j = _quiet_jvm() if quiet else None
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    try:
        if log4j is not None:
            options = {"spark.app.name": app_name, **(conf or {})}
            options["spark.ui.showConsoleProgress"] = "false"
            if master is not None:
                options["spark.master"] = master
            _start_quiet_gateway(options)
        spark = builder.getOrCreate()
    finally:
        if log4j is not None:  # read by now (or the JVM failed to start)
            os.unlink(log4j)
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def read(spark, paths: list[str], **options):
    """``spark.read.format("kseg")`` with options given as keywords (values become strings)."""
    import json

    reader = spark.read.format("kseg")
    if spark.conf.get("spark.sql.python.filterPushdown.enabled", "false") == "true":
        reader = reader.option("filterPushdown", "true")
    for key, value in options.items():
        if value is not None:
            reader = reader.option(
                key, str(value).lower() if isinstance(value, bool) else str(value)
            )
    return reader.load(json.dumps([str(p) for p in paths]) if len(paths) > 1 else str(paths[0]))


def read_map_in_arrow(
    spark,
    paths: list[str],
    *,
    include_headers: bool = False,
    include_control: bool = False,
    max_bytes: int | None = None,
    topic: str | None = None,
):
    """The records table without the Python Data Source API (Spark 3.3+): tasks are planned on
    the driver and decoded on executors by mapInArrow, through the same decoder as the source."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from kseg.spark import planning
    from kseg.spark.arrow import record_batches, records_schema

    tasks = planning.plan(
        [str(p) for p in paths],
        planning.Prune(topic=topic),
        max_bytes or planning.DEFAULT_MAX_BYTES,
    )
    schema = from_arrow_schema(records_schema(include_headers, False))
    ddl = "path string, topic string, partition int, base_offset long, start long, end long, kind string, log_dir string"
    plan = spark.createDataFrame([t.to_dict() for t in tasks], ddl).repartition(max(1, len(tasks)))

    def decode(batches):
        for b in batches:
            for row in b.to_pylist():
                yield from record_batches(
                    planning.Task(**row),
                    include_headers=include_headers,
                    include_control=include_control,
                )

    return plan.mapInArrow(decode, schema)


def export(
    spark,
    paths: list[str],
    out: str,
    *,
    fmt: str = "parquet",
    partition_by=("topic", "partition"),
    include_headers: bool = True,
    writer: str | None = None,
    unreadable: list[str] | None = None,
    **options,
) -> int:
    """Write the records table (Spark Kafka source schema, headers included by default).
    ``writer``: "arrow" (pyarrow on the executors, kseg.spark.parquet_out), "spark" (Spark's
    own writer) or None: arrow where it serves the export (Parquet, partitioned by topic and/or
    partition, a sink pyarrow.fs writes), Spark's otherwise. ``unreadable`` (the Arrow writer
    only: Spark's keeps them in the executors' logs) gets a message for each segment that could
    not be read; the export holds everything else."""
    require_input(paths, options.get("topic"), kafka07=True)
    if unreadable is not None:  # left out by the plan (kseg.spark.planning), said here
        from kseg.spark.planning import Prune, unreadable_segments

        unreadable.extend(
            unreadable_segments(paths, Prune(topic=options.get("topic")), kafka07=True)
        )
    codec = spark.conf.get("spark.sql.parquet.compression.codec", "snappy")
    if choose_writer(writer, fmt, partition_by or (), out, codec) == "arrow":
        from kseg.spark import parquet_out

        return parquet_out.export(
            spark, paths, out, partition_by=partition_by or (),
            include_headers=include_headers, compression=codec, unreadable=unreadable,
            **options,
        )  # fmt: skip
    df = read(spark, paths, mode="records", includeHeaders=include_headers, **options)
    writer = df.write.mode("overwrite")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    if fmt == "json":
        writer.json(out)
    elif fmt == "parquet":
        writer.parquet(out)
    else:
        raise ValueError(f"unknown export format {fmt!r}: parquet or json")
    return spark.read.parquet(out).count() if fmt == "parquet" else spark.read.json(out).count()


def choose_writer(
    writer: str | None, fmt: str, partition_by, out: str, codec: str = "snappy"
) -> str:
    """The export's writer, "arrow" or "spark": ``writer`` if it serves, else a usage mistake
    (BadOption); None picks arrow wherever it serves (measured faster, docs/benchmarks-history.md)."""
    from kseg.outcome import BadOption
    from kseg.spark.parquet_out import unserved

    if writer not in (None, "arrow", "spark"):
        raise BadOption(f"arrow or spark, not {writer!r}", "--writer")
    if writer == "spark":
        return writer
    why = unserved(fmt, partition_by, out, codec)
    if why is not None and writer == "arrow":
        raise BadOption(why, "--writer")
    return "spark" if why else "arrow"


def verify(spark, paths: list[str], out: str | None = None, **options) -> tuple[list[dict], dict]:
    """`kseg verify` on every partition, fleet-wide: (findings, summary), the summary's last
    key the ``outcome`` (as `kseg verify`'s run: the CLI shows it as the exit_code)."""
    from kseg.spark.planning import log_dirs
    from kseg.storage.uri import as_path
    from kseg.verify.findings import ERROR, INFO, WARNING, finding_outcome
    from kseg.verify.root_checkpoints import verify_root_checkpoints

    require_input(paths, options.get("topic"), segments=False)
    df = read(spark, paths, mode="findings", **options)
    if out:
        df.write.mode("overwrite").parquet(out)
    rows = [r.asDict() for r in df.collect()]
    summaries = [r for r in rows if r["severity"] == "summary"]
    found = [r for r in rows if r["severity"] != "summary"]
    # log.dirs checkpoint files against the log ends the executors found (paths or URIs)
    below = {r["file"] for r in found if r["kind"] == "below_log_start"}
    for root in log_dirs(paths):
        ends = [
            _End(as_path(s["file"]), s["offset"], s["file"] in below)
            for s in summaries
            if as_path(s["file"]).parent == root
        ]
        for f, tags in verify_root_checkpoints(root, ends):
            found.append({**tags, **f.to_event()})
            found[-1].pop("type", None)
    counts = {sev: sum(1 for r in found if r["severity"] == sev) for sev in (ERROR, WARNING, INFO)}
    # as kseg verify: unreadable, other errors invalid data
    outcome = combined(finding_outcome(r["kind"], r["severity"]) for r in found)
    summary = {
        "type": "summary",
        "partitions": len(summaries),
        "errors": counts[ERROR],
        "warnings": counts[WARNING],
        "infos": counts[INFO],
        "outcome": outcome,
    }
    return found, summary


class _End:
    """What verify_root_checkpoints reads of a partition report."""

    def __init__(self, pdir, end: int | None, below_log_start: bool = False) -> None:
        from kseg.storage.tree import Target

        self.target = Target(pdir, [])
        self.kafka_log_end = end
        self.below_log_start = below_log_start


def stats(spark, paths: list[str], per_hour: bool = False, *, problems: bool = False, **options):
    """Per topic-partition (and hour): records, bytes, codecs and ratio, offset and timestamp
    ranges, producers, transactional share. Header-level work plus one decompression a batch.

    What each column means is defined once, in kseg.stats.stats (the local `kseg stats`): the
    aggregations below compute exactly those numbers from the batches view, and
    tests/spark/test_stats_local.py holds the two implementations together.

    ``problems``: one more column, ``problems``, the list of "<kind>\t<message>" of what the
    row's segments held that `kseg stats` reports (stats_run says them); a row counts only
    batches (``batches`` 0: problems alone)."""
    from pyspark.sql import functions as F

    from kseg.format.timestamps import MAX_MS

    require_input(paths, options.get("topic"))
    df = read(spark, paths, mode="batches", computeUncompressed=True, problems=problems, **options)
    keys = ["topic", "partition", "log_dir"]  # one row per replica: they may differ
    if per_hour:
        df = df.withColumn(
            "hour",
            # a max timestamp no date holds (years 0001-9999) has no hour: null, never an error
            F.date_trunc(
                "hour",
                F.timestamp_millis(
                    F.when(
                        F.col("max_timestamp").between(0, MAX_MS), F.col("max_timestamp")
                    ).otherwise(F.lit(None))
                ),
            ),
        )
        keys.append("hour")
    more = []
    if problems:  # a problem row has no hour: its own group (batches 0), in the same pass
        problem = F.when(F.col("problem").isNotNull(), F.concat_ws("\t", "problem_kind", "problem"))
        more.append(F.collect_list(problem).alias("problems"))
    agg = df.groupBy(*keys).agg(
        F.sum(F.when(~F.col("is_control"), F.col("count")).otherwise(0)).alias("records"),
        F.count("size").alias("batches"),  # not a problem row (problems=True): size is null
        F.sum("size").alias("bytes"),
        F.sum("uncompressed_size").alias("uncompressed_bytes"),
        F.array_sort(F.collect_set("compression")).alias("codecs"),
        F.min("base_offset").alias("first_offset"),
        F.max("last_offset").alias("last_offset"),
        F.min(F.when(F.col("base_timestamp") >= 0, F.col("base_timestamp"))).alias(
            "min_base_timestamp"
        ),
        F.max("max_timestamp").alias("max_timestamp"),
        F.countDistinct(F.when(F.col("producer_id") >= 0, F.col("producer_id"))).alias("producers"),
        (
            F.sum(F.when(F.col("is_transactional"), F.col("size")).otherwise(0)) / F.sum("size")
        ).alias("transactional_share"),
        *more,
    )
    agg = agg.withColumn("compression_ratio", F.col("uncompressed_bytes") / F.col("bytes"))
    return agg.orderBy(*keys)


def verify_events(spark, paths: list[str], out: str | None = None, **options) -> list[dict]:
    """``verify``'s findings and summary as the events `kseg verify` shows."""
    found, summary = verify(spark, paths, out, **options)
    return [{"type": "finding", **f} for f in found] + [summary]


def stats_events(spark, paths: list[str], per_hour: bool = False, **options) -> list[dict]:
    """``stats`` rows as events (the hour as text); no batch at all is said, as a notice."""
    return stats_run(spark, paths, per_hour, **options)[0]


def stats_run(spark, paths: list[str], per_hour: bool = False, **options):
    """(events, outcome) of ``stats``, as `kseg stats` reports them: a failure (one line) for
    each segment left out because it is no regular file (exit 8, the rest counted) and for each
    problem met (invalid data: exit 4; unreadable: 8), then the rows."""
    from kseg.outcome import Outcome, outcome_of_kind
    from kseg.spark.planning import Prune, unreadable_segments

    found = Outcome.OK
    events: list[dict] = []
    for message in unreadable_segments(paths, Prune(topic=options.get("topic"))):
        found |= Outcome.UNREADABLE
        events.append({"type": "failure", "message": message})
    rows = []
    for r in stats(spark, paths, per_hour=per_hour, problems=True, **options).collect():
        row = r.asDict()
        for problem in row.pop("problems", None) or []:
            kind, _, message = problem.partition("\t")
            found |= outcome_of_kind(kind)
            events.append({"type": "failure", "message": message})
        if row["batches"]:
            rows.append(
                {"type": "stats", **{k: (str(v) if k == "hour" else v) for k, v in row.items()}}
            )
    if not rows:  # segments exist but hold no batch (e.g. empty active segments)
        message = f"{', '.join(paths)}: the segments hold no batch: nothing to count"
        rows = [{"type": "notice", "message": message}]
    return events + rows, found


def stop_gateway() -> None:
    """After an interrupt: end the JVM this process started (pyspark's gateway, or spark-submit
    still starting it), so that no Spark job runs on, or writes to our terminal, after kseg has
    exited. pyspark only ends it when its stdin closes, which a JVM still starting up never
    reads. Children are found through /proc (Linux); elsewhere this does nothing."""
    import signal

    pids = []
    try:
        from pyspark import SparkContext

        proc = getattr(SparkContext._gateway, "proc", None)
        if proc is not None and proc.poll() is None:
            pids.append(proc.pid)
    except ImportError:
        pass
    me = os.getpid()
    proc_dir = Path("/proc")
    if proc_dir.is_dir():
        for d in proc_dir.iterdir():
            if not d.name.isdigit():
                continue
            if _stat(d.name)[1:2] != [str(me)]:  # not our child (ppid), or gone
                continue
            try:
                cmdline = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if b"spark" in cmdline.lower():
                pids.append(int(d.name))
    pids = list(dict.fromkeys(pids))
    _kill(pids, signal.SIGTERM)
    # wait (bounded) until they have exited: a JVM still starting up otherwise goes on writing
    # its start-up warnings to our stderr after kseg's last line; SIGKILL whatever is left
    import time

    deadline = time.monotonic() + 5
    while (left := [p for p in pids if _running(p)]) and time.monotonic() < deadline:
        time.sleep(0.02)
    _kill(left, signal.SIGKILL)


def _stat(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command name (state, ppid, ...); [] when gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _running(pid: int) -> bool:
    """Is ``pid`` still running (not gone, not a zombie waiting to be reaped)?"""
    stat = _stat(pid)
    return bool(stat) and stat[0] not in ("Z", "X")


def _kill(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
