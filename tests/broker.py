"""A real Apache Kafka 4.1.0 broker (../shared/kafka) as an oracle for kseg's tests.

Kafka is the reference for what kseg predicts and writes: a broker started over a data dir shows
what its recovery really keeps (``recover_with_kafka``), and a broker serving a dir kseg repaired
shows which records a consumer really gets (``Broker.serve`` + ``Broker.consume``). Its bin/ tools
(kafka-consumer-groups, kafka-get-offsets, kafka-dump-log, ...) are oracles too (``Broker.tool``).

Tests use the session fixture ``kafka_home`` (tests/conftest.py), which skips with a reason where
``../shared/kafka`` is absent (a user's fresh clone). A broker start costs 5-30 s on these
machines: keep broker tests few and batch many cases into one start.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SHARED_KAFKA = Path(__file__).resolve().parents[2] / "shared" / "kafka"
KAFKA_TGZ = SHARED_KAFKA / "kafka_2.13-4.1.0.tgz"
START_TIMEOUT = 180.0  # seconds: a JVM start on a loaded 2-core machine
STARTED = "Kafka Server started"
# files of a partition dir that hold records or their indexes/state (what serve() copies)
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")


def unpack_kafka(dest: Path) -> Path:
    """Unpack the distribution under ``dest`` (once) and return its home (bin/, libs/, config/)."""
    home = dest / "kafka_2.13-4.1.0"
    if not (home / "bin" / "kafka-server-start.sh").exists():
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(KAFKA_TGZ) as tar:
            tar.extractall(dest, filter="fully_trusted")
    return home


# Every Kafka JVM of the tests (brokers, controllers, bin/ tools) lives seconds and holds a few KB:
# the client compiler only and the serial collector cost far less CPU to start.
FAST_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true"


def kafka_env(home: Path, logs: Path, heap: str, dump: Path | None = None) -> dict[str, str]:
    """The environment of a Kafka JVM started from ``home`` (kafka-run-class.sh reads it):
    FAST_JVM, the session's shared class archive once there is one (class_archive), ``dump``:
    write that archive when this JVM exits."""
    env = dict(os.environ)
    env["KAFKA_HEAP_OPTS"] = heap
    opts = FAST_JVM
    if dump is not None:
        opts += f" -XX:ArchiveClassesAtExit={dump} -Xlog:cds*=off"
    elif (archive := class_archive(home)) is not None:
        opts += f" -XX:SharedArchiveFile={archive} -Xlog:cds*=off"
    env["KAFKA_JVM_PERFORMANCE_OPTS"] = opts
    env["LOG_DIR"] = str(logs)
    env.pop("KAFKA_OPTS", None)
    env.pop("CLASSPATH", None)
    return env


# Class data sharing for the Kafka JVMs of a session (as tests/conftest.py does for Spark's): the
# first broker started from a home writes the classes it loaded to an archive when it exits
# (-XX:ArchiveClassesAtExit); every Kafka JVM started from that home later maps the archive
# instead of loading and verifying those classes again (a broker's start: 3.9 -> 2.5 s of CPU,
# a bin/ tool's: 2.1 -> 1.3 s, on an idle 2-core machine). The archive names the home's jars,
# so it is the home's own; a JVM finding it does not match runs as without it, quietly
# (-Xlog:cds*=off). A JVM killed before it wrote the archive gives the claim back
# (finish_class_dump). KSEG_TEST_SHARED_CLASSES=0: no archive.
def class_archive(home: Path) -> Path | None:
    archive = home / "kseg-cds" / "kafka.jsa"
    return archive if archive.is_file() else None


def claim_class_dump(home: Path) -> Path | None:
    """The file a broker about to start should write the archive to, or None (there is one,
    another JVM writes it, or sharing is off). Claimed once per home."""
    if os.environ.get("KSEG_TEST_SHARED_CLASSES") == "0":
        return None
    folder = home / "kseg-cds"
    folder.mkdir(exist_ok=True)
    if (folder / "kafka.jsa").exists():
        return None
    try:
        os.close(os.open(folder / "claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return None
    return folder / "dump.jsa"


def finish_class_dump(dump: Path | None, proc: subprocess.Popen | None) -> None:
    """After the JVM that was to write ``dump`` ended: its archive put in place (whole: renamed,
    never half) when the JVM exited by itself (a SIGTERM runs its exit); after a kill (a file
    maybe half written, or none) the file and the claim go, so the next broker writes one."""
    if dump is None:
        return
    if proc is not None and (proc.returncode or 0) >= 0 and dump.is_file():
        dump.rename(dump.with_name("kafka.jsa"))
        return
    dump.unlink(missing_ok=True)
    dump.with_name("claimed").unlink(missing_ok=True)


def terminate(proc: subprocess.Popen | None, timeout: float) -> None:
    """Stop a JVM started in its own process group: SIGTERM (a broker's controlled shutdown),
    then wait; SIGKILL if it does not end in ``timeout`` seconds."""
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def kafka_uuid() -> str:
    """A random Kafka Uuid as `kafka-storage.sh random-uuid` prints it (without its JVM): 16
    random bytes in URL-safe base64 without padding, never the reserved zero and metadata-topic
    ids, never starting with '-' (Uuid.randomUuid's rules)."""
    import base64
    import uuid

    while True:
        raw = uuid.uuid4().bytes
        text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        if raw not in (bytes(16), bytes(15) + b"\x01") and not text.startswith("-"):
            return text


def create_topics(bootstrap: str, topics: dict[str, int], *, if_not_exists: bool = False) -> None:
    """Create ``{topic: partitions}`` (replication factor 1) through kafka-python's admin client
    (a bin/kafka-topics.sh start is a JVM); ``if_not_exists``: one that exists is left as it is."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60000)
    try:
        if if_not_exists:
            there = set(admin.list_topics())
            topics = {t: n for t, n in topics.items() if t not in there}
        if topics:
            admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()], timeout_ms=60000)
    finally:
        admin.close()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# Ports handed out by this process so far (never the same one twice in a session).
_PORTS_GIVEN: set[int] = set()
_PORT_SPAN = 1000  # ports per xdist worker


def free_port() -> int:
    """A port no one listens on, for a broker or controller to bind later.

    Not bind(("127.0.0.1", 0)): that port comes from the ephemeral range, which every outgoing
    connection (a Kafka client's, another broker's) also draws from, so between our probe and the
    JVM's bind another socket could take it ("Address already in use" in CI). Ports below the
    ephemeral range are never given to outgoing connections; each xdist worker owns its own
    slice of them, so two workers never race for one port either.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    top = _ephemeral_low()
    base = max(1024, top - 16 * _PORT_SPAN) + (index % 16) * _PORT_SPAN
    start = os.getpid() % _PORT_SPAN  # two sessions at once start at different places
    for step in range(_PORT_SPAN):
        port = base + (start + step) % _PORT_SPAN
        if port in _PORTS_GIVEN or port >= top:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _PORTS_GIVEN.add(port)
        return port
    with socket.socket() as s:  # every port of our slice is taken: the old way, at worst racy
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_tool(home: Path, env: dict, script: str, *args: str, timeout: float = 120,
             check: bool = False) -> subprocess.CompletedProcess:  # fmt: skip
    """Run the distribution's bin/<script> with ``env``; ``check``: raise with its stderr's
    tail when it fails."""
    proc = subprocess.run(
        [str(home / "bin" / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"{script} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
        )
    return proc


@dataclass
class Record:
    """One record as a Kafka consumer received it."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


class Broker:
    """A single-node KRaft broker (broker + controller) on 127.0.0.1 over ``workdir/data``."""

    def __init__(
        self,
        home: Path,
        workdir: Path,
        cluster_id: str | None = None,
        config: dict[str, str] | None = None,
    ):
        self.home = home
        self.extra_config = dict(config or {})  # server.properties lines added (or overriding)
        self.workdir = workdir
        self.data = workdir / "data"
        self.logs = workdir / "logs"
        self.port = free_port()
        self.cport = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self._dump: Path | None = None  # the class archive this broker writes at its exit
        self.config = workdir / "server.properties"
        workdir.mkdir(parents=True, exist_ok=True)
        self._write_config()
        if not (self.data / "meta.properties").exists():
            cid = cluster_id or kafka_uuid()
            self.tool(
                "kafka-storage.sh", "format", "-t", cid, "-c", str(self.config), "--standalone",
                check=True,
            )  # fmt: skip

    # -- process ---------------------------------------------------------------------------
    def _write_config(self) -> None:
        self.config.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.bootstrap.servers=127.0.0.1:{self.cport}",
                    f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.cport}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.cport}",
                    "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    f"log.dirs={self.data}",
                    "offsets.topic.replication.factor=1",
                    "offsets.topic.num.partitions=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "transaction.state.log.num.partitions=1",
                    "group.initial.rebalance.delay.ms=0",
                    "num.recovery.threads.per.data.dir=1",
                    # segments are never deleted by retention while a test looks at them
                    "log.retention.ms=-1",
                    "log.retention.check.interval.ms=3600000",
                    *(f"{k}={v}" for k, v in self.extra_config.items()),
                    "",
                ]
            )
        )

    def env(self, dump: Path | None = None) -> dict[str, str]:
        return kafka_env(self.home, self.logs, "-Xmx512m -Xms128m", dump)

    def tool(self, script: str, *args: str, timeout: float = 120, check: bool = False):
        """Run bin/<script> (e.g. ``kafka-consumer-groups.sh``); ``--bootstrap-server`` is the
        caller's to pass (``self.bootstrap``). Returns the CompletedProcess (text)."""
        return run_tool(self.home, self.env(), script, *args, timeout=timeout, check=check)

    def server_log(self) -> str:
        path = self.logs / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start(self) -> Broker:
        mark = len(self.server_log())
        self._dump = claim_class_dump(self.home)
        self.proc = subprocess.Popen(
            [str(self.home / "bin" / "kafka-server-start.sh"), str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=self.env(self._dump),
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if STARTED in self.server_log()[mark:]:
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the Kafka broker exited {self.proc.returncode} before it started:\n"
                    + self.server_log()[mark:][-4000:]
                )
            time.sleep(0.25)
        self.stop()
        raise RuntimeError("the Kafka broker did not start in time:\n" + self.server_log()[-4000:])

    def stop(self) -> None:
        """SIGTERM (a controlled shutdown writes .kafka_cleanshutdown), then wait; SIGKILL last."""
        proc, self.proc = self.proc, None
        terminate(proc, 90)
        dump, self._dump = self._dump, None
        finish_class_dump(dump, proc)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- topics and data -------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, *, if_not_exists: bool = False) -> None:
        create_topics(self.bootstrap, {name: partitions}, if_not_exists=if_not_exists)

    def partition_dir(self, topic: str, partition: int) -> Path:
        return self.data / f"{topic}-{partition}"

    def serve(self, partitions: dict[tuple[str, int], Path]) -> None:
        """Make the (stopped) broker serve the segment files of each source partition dir.

        Topics are created first (the metadata knows them: their dirs keep their own
        ``partition.metadata``), the broker is stopped, each new dir's segment files are replaced
        by the source's (``.log``, indexes, ``.snapshot``; ``leader-epoch-checkpoint`` too), and
        ``.kafka_cleanshutdown`` is removed so that Kafka's recovery checks every copied byte on
        the next start. Leaves the broker stopped: call ``start()``.
        """
        topics: dict[str, int] = {}
        for topic, p in partitions:
            topics[topic] = max(topics.get(topic, 0), p + 1)
        with self:
            create_topics(self.bootstrap, topics)
        for (topic, p), src in partitions.items():
            dest = self.partition_dir(topic, p)
            for f in dest.iterdir():
                if f.name.endswith(SEGMENT_SUFFIXES):
                    f.unlink()
            for f in sorted(Path(src).iterdir()):
                if f.is_file() and (
                    f.name.endswith(SEGMENT_SUFFIXES) or f.name == "leader-epoch-checkpoint"
                ):
                    shutil.copy2(f, dest / f.name)
                    (dest / f.name).chmod(0o644)
        (self.data / ".kafka_cleanshutdown").unlink(missing_ok=True)

    def consume(self, topic: str, partition: int, *, read_committed: bool = False,
                timeout: float = 60) -> list[Record]:  # fmt: skip
        """Every record of one partition, from its log start to its end, as kafka-python's
        consumer receives them (read_uncommitted by default)."""
        from kafka import KafkaConsumer, TopicPartition

        tp = TopicPartition(topic, partition)
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            enable_auto_commit=False,
            isolation_level="read_committed" if read_committed else "read_uncommitted",
            consumer_timeout_ms=2000,
            request_timeout_ms=30000,
        )
        try:
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            end = consumer.end_offsets([tp])[tp]
            out: list[Record] = []
            deadline = time.monotonic() + timeout
            while consumer.position(tp) < end and time.monotonic() < deadline:
                for msgs in consumer.poll(timeout_ms=1000).values():
                    # kafka-python says None where Kafka's consumer says -1 (NO_TIMESTAMP, magic 0)
                    out.extend(
                        Record(m.offset, -1 if m.timestamp is None else m.timestamp, m.key,
                               m.value, list(m.headers or []))
                        for m in msgs
                    )  # fmt: skip
            return out
        finally:
            consumer.close()

    def end_offsets(self, topic: str) -> dict[int, int]:
        """kafka-get-offsets.sh --time latest: partition -> log end offset."""
        return {p: o for (_, p), o in self.all_end_offsets([topic]).items()}

    def all_end_offsets(self, topics: list[str]) -> dict[tuple[str, int], int]:
        """kafka-get-offsets.sh --time latest for several topics in one run (its --topic is a
        regular expression; one JVM): (topic, partition) -> log end offset."""
        import re

        pattern = "^(" + "|".join(re.escape(t) for t in topics) + ")$"
        out = self.tool(
            "kafka-get-offsets.sh", "--bootstrap-server", self.bootstrap, "--topic", pattern,
            "--time", "-1", check=True,
        ).stdout  # fmt: skip
        return {(t, int(p)): int(o) for t, p, o in (line.rsplit(":", 2) for line in out.split())}


def _copy_writable(src: Path, dest: Path) -> None:
    """Copy a partition dir so the broker can change it (../shared/real is read-only)."""
    shutil.copytree(src, dest)
    for f in dest.iterdir():
        f.chmod(0o644)


@dataclass
class Recovered:
    """What a broker's recovery left of one partition dir: its files with their sizes, and the
    server.log lines that name it."""

    dir: Path | None
    files: dict[str, int]
    log_lines: list[str]
    started: bool = True  # False: the broker stopped at start-up ("Error starting LogManager")


def recover_with_kafka(
    home: Path,
    workdir: Path,
    partitions: dict[str, Path],
    *,
    clean_shutdown: bool = False,
    recovery_points: dict[str, int] | None = None,
) -> dict[str, Recovered]:
    """Start a fresh broker once over copies of ``partitions`` (dir name -> source partition
    dir), after an unclean shutdown (no ``.kafka_cleanshutdown``, no recovery point; or as
    ``clean_shutdown`` and ``recovery_points`` say), and return
    what Kafka's recovery left of each. The metadata does not know these partitions, so Kafka
    renames each ``<dir>.<uuid>-stray`` after its recovery has run; ``Recovered.dir`` is that dir.
    A broker that stops during start-up (one partition Kafka cannot load stops them all) gives
    ``started=False`` for every partition: give such a case a start of its own.
    """
    broker = Broker(home, workdir)
    for name, src in partitions.items():
        _copy_writable(src, broker.data / name)
    if clean_shutdown:  # as a controlled shutdown leaves it (LogManager reads the broker epoch)
        (broker.data / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":1}')
    else:
        (broker.data / ".kafka_cleanshutdown").unlink(missing_ok=True)
    if recovery_points:
        lines = [
            f"{n.rsplit('-', 1)[0]} {n.rsplit('-', 1)[1]} {o}" for n, o in recovery_points.items()
        ]
        text = "\n".join(["0", str(len(lines)), *lines, ""])
        (broker.data / "recovery-point-offset-checkpoint").write_text(text)
    try:
        with broker:
            pass
        started = True
    except RuntimeError:
        started = False
    log = broker.server_log()
    out: dict[str, Recovered] = {}
    for name in partitions:
        found = [
            d for d in broker.data.iterdir() if d.name == name or d.name.startswith(name + ".")
        ]
        d = found[0] if found else None
        files = {f.name: f.stat().st_size for f in sorted(d.iterdir()) if f.is_file()} if d else {}
        pat = re.compile(rf"\b{re.escape(name)}\b")
        lines = [line for line in log.splitlines() if pat.search(line)]
        out[name] = Recovered(d, files, lines, started)
    return out
