"""The operator contract of every command (docs/conventions.md), each statement
tested through the real entry point as a subprocess, on the layouts that broke it (issue 12):
interrupts, nothing Kafka found, partitions without a .log, directories of broker roots, the
exit-code table, --version, completion, examples in --help, where JSON objects come from."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import pytest

import kseg
from kseg.cli.exit import TABLE
from tests.helpers import events, kseg_command, run_kseg

README = Path(__file__).resolve().parents[2] / "README.md"
UUID = "0123456789abcdef0123456789abcdef"

# every command that takes PATHs, with the options it needs to run
PATH_COMMANDS = [
    ["dump"],
    ["verify"],
    ["seek", "--time", "latest"],
    ["seek", "--offset", "0"],
    ["index", "check"],
    ["index", "rebuild", "--dry-run"],
    ["txn"],
]
# commands that compare replicas: they need two or more roots (one root alone is a usage error)
REPLICA_COMMANDS = [["replicas"]]
SPARK_COMMANDS = [
    ["spark", "stats"],
    ["spark", "verify"],
    ["spark", "export", "--out", "/tmp/x"],
    ["spark", "replicas"],
]


def _err_lines(proc) -> list[str]:
    return proc.stderr.decode().splitlines()


# --- inputs ---------------------------------------------------------------------------------


def _records(b: int, n: int = 50) -> list:
    return [
        kseg.Record(key=b"k%d" % i, value=b"v" * 300, timestamp=1_700_000_000_000 + b * 100 + i)
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def big_root(tmp_path_factory) -> Path:
    """A root whose first partition (a-0) has a CRC error and whose second (big-0, ~45 MB of
    small records in 1 MiB segments) takes seconds to verify --deep or dump -f json."""
    root = tmp_path_factory.mktemp("big") / "logs"
    with kseg.LogWriter(root / "a-0") as w:
        info = w.append(_records(0, 5))
    log = root / "a-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[info.position + 70] ^= 0xFF  # inside the records: the CRC no longer matches
    log.write_bytes(bytes(data))
    with kseg.LogWriter(root / "big-0", segment_bytes=1 << 20) as w:
        for b in range(3000):
            w.append(_records(b))
    return root


@pytest.fixture(scope="module")
def wide_root(tmp_path_factory) -> Path:
    """A root of 300 small partitions: seek and the index commands take a while over it."""
    root = tmp_path_factory.mktemp("wide") / "logs"
    with kseg.LogWriter(root / "wide-0", segment_bytes=20_000) as w:
        for b in range(8):
            w.append(_records(b))
    for n in range(1, 300):
        shutil.copytree(root / "wide-0", root / f"wide-{n}")
    return root


def _family(pid: int) -> list[int]:
    """The process and its children (the --jobs workers that walk the partitions)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return [pid, *map(int, children)]


def _working_on(pid: int, path: Path, maps: bool) -> bool:
    """Has the process or one of its workers opened (or, checked less often, mapped) a segment
    file under ``path`` (or ``path`` itself, a segment file)? Then it is past start-up and
    classification, mid-run."""
    return any(_opened(p, path, maps) for p in _family(pid))


def _opened(pid: int, path: Path, maps: bool) -> bool:
    prefix = str(path) if path.name.startswith("000000000") else str(path) + "/"
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith(prefix) and "/000000000" in target:
                return True
        if maps:
            with open(f"/proc/{pid}/maps") as f:
                return any(
                    prefix in line and "/000000000" in line for line in f.read().splitlines()
                )
    except OSError:
        return False
    return False


def _interrupt(args: list, busy: Path, sig: int, cwd=None) -> subprocess.CompletedProcess:
    """Start kseg, wait until it works on ``busy``, send ``sig``, collect everything."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to see when the run is under way")
    proc = subprocess.Popen(
        [*kseg_command(), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
    )
    deadline = time.monotonic() + 120
    n = 0
    while not _working_on(proc.pid, busy, maps=n % 20 == 0):
        assert proc.poll() is None, f"finished before the signal: {proc.stderr.read()!r}"
        assert time.monotonic() < deadline, "never started working on the input"
        n += 1
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# --- 1. interrupts ----------------------------------------------------------------------------

SIGNALS = [signal.SIGINT, signal.SIGTERM]


@pytest.mark.parametrize("sig", SIGNALS, ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize(
    "args",
    [["verify", "--deep"], ["dump", "-f", "json"], ["dump"], ["index", "check"]],
    ids=["verify-deep", "dump-json", "dump-text", "index-check"],
)
def test_interrupt_exits_32_with_one_line(big_root, args, sig):
    proc = _interrupt([*args, big_root / "big-0"], big_root / "big-0", sig)
    assert proc.returncode == 32, proc.stderr
    assert _err_lines(proc) == ["kseg: interrupted"]


@pytest.mark.parametrize("sig", SIGNALS, ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize(
    "args",
    [
        ["seek", "--time", "latest"],
        ["seek", "--offset", "120"],
        ["index", "check"],
        ["stats", "--by", "hour"],
        ["dump", "--count"],
        ["dump", "--value", "x", "-f", "json"],
        ["salvage", "--dry-run"],
    ],
    ids=[
        "seek-time",
        "seek-offset",
        "index-check",
        "stats",
        "dump-count",
        "dump-search",
        "salvage-dry-run",
    ],
)
def test_interrupt_wide_commands(wide_root, args, sig):
    proc = _interrupt([*args, wide_root], wide_root, sig)
    assert proc.returncode == 32, proc.stderr
    assert _err_lines(proc) == ["kseg: interrupted"]


@pytest.mark.parametrize("sig", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_interrupt_replicas(wide_root, tmp_path, sig):
    """Two brokers' copies of the 300 partitions (hard links: two roots, not one root twice,
    which is one replica): `kseg replicas` compares them a while."""
    for n in (1, 2):
        shutil.copytree(wide_root, tmp_path / f"broker-{n}", copy_function=os.link)
    proc = _interrupt(["replicas", tmp_path], tmp_path, sig)
    assert proc.returncode == 32, proc.stderr
    assert _err_lines(proc) == ["kseg: interrupted"]


@pytest.mark.parametrize("sig", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_interrupted_index_rebuild_leaves_no_temp_file(wide_root, tmp_path, sig):
    root = tmp_path / "logs"
    shutil.copytree(wide_root, root)
    for idx in root.glob("*/*.index"):
        idx.unlink()  # every segment gets a file written
    proc = _interrupt(["index", "rebuild", root], root, sig)
    assert proc.returncode == 32, proc.stderr
    assert _err_lines(proc) == ["kseg: interrupted"]
    assert not [p for p in root.rglob("*") if "kseg-tmp" in p.name]
    # and a second run finishes the job
    assert run_kseg("index", "rebuild", root).returncode == 0
    assert run_kseg("index", "check", root).returncode == 0


def test_interrupted_verify_ors_32_with_what_it_found(big_root):
    """a-0 (a CRC error: 4) is checked before big-0, during which the signal arrives."""
    proc = _interrupt(
        ["verify", "--deep", big_root, "--jobs", "1"], big_root / "big-0", signal.SIGINT
    )
    assert proc.returncode == 32 | 4, proc.stderr
    assert _err_lines(proc) == ["kseg: interrupted"]


def test_interrupted_verify_with_workers_ors_32_with_what_it_showed(big_root):
    """With workers, a-0 and big-0 are walked at once: the signal (sent once a worker is on
    big-0) may come before or after a-0's findings are shown. The exit code is 32, with 4 ORed
    in only where a-0's error was shown (its counters are added once its partition is done:
    a finding shown just before the signal may be left out, never one that was not shown)."""
    proc = _interrupt(
        ["verify", "--deep", big_root, "--jobs", "2"], big_root / "big-0", signal.SIGINT
    )
    shown = b"a-0" in proc.stdout and b"ERROR" in proc.stdout
    assert proc.returncode in ((32, 32 | 4) if shown else (32,)), (proc.stdout, proc.stderr)
    assert _err_lines(proc) == ["kseg: interrupted"]


@pytest.mark.parametrize("sig", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_interrupted_demo_leaves_nothing(tmp_path, sig):
    """The demo is built aside and renamed: an interrupt leaves neither it nor a half tree."""
    proc = _interrupt(["demo", "demo"], tmp_path, sig, cwd=tmp_path)
    assert proc.returncode == 32, proc.stderr
    assert _err_lines(proc) == ["kseg: interrupted"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("sig", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_a_signal_after_the_outcome_changes_nothing(tmp_path, sig):
    """A signal that arrives once the command has finished (its output flushed, the process
    exiting) used to kill it during the interpreter's shutdown (status -2, or an "Exception
    ignored" traceback): now it stays pending and the status is the command's own. The
    signal is sent from an atexit hook, i.e. exactly in that window, deterministically."""
    import sys

    code = (
        "import atexit, os, signal, sys; from kseg.cli.entry import main;"
        f"atexit.register(lambda: os.kill(os.getpid(), {int(sig)}));"
        "sys.argv = ['kseg', 'seek', sys.argv[1], '--offset', '0']; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "nothing")], capture_output=True, timeout=60
    )
    assert proc.returncode == 16, proc  # the outcome (a path that is not there), not the signal
    assert proc.stderr.count(b"\n") == 1 and b"Traceback" not in proc.stderr, proc.stderr


def test_a_signal_during_an_import_waits_for_the_import(tmp_path):
    """An exception raised inside a module's import can crash a C extension's init (orjson
    segfaulted, status -11, when Ctrl-C landed while kseg imported it): a signal that arrives
    inside an import is held until the import is over, then raised as usual."""
    import sys

    (tmp_path / "slow_module.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nDONE = True\n"
    )
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); from kseg.cli import signals\n"
        "signals.install()\n"
        "try:\n"
        "    import slow_module\n"
        "    assert slow_module.DONE\n"
        "    deadline = time.monotonic() + 10\n"
        "    while time.monotonic() < deadline: sum(range(1000))\n"
        "    print('never interrupted')\n"
        "except signals.Interrupted as exc:\n"
        "    from kseg.cli.exit import exit_status\n"
        "    print('interrupted after the import', 'slow_module' in sys.modules,"
        " int(exit_status(exc)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"interrupted after the import True 32\n", proc.stdout


def test_an_interrupt_inside_a_finalizer_is_raised_again_in_ordinary_code():
    """A signal whose Interrupted lands in a finalizer (a map's ``__del__``, a generator being
    closed) cannot be raised there: Python would print "Exception ignored in" and a traceback and
    go on. The console script's unraisable hook raises it again shortly, in ordinary code."""
    code = (
        "import os, signal, sys, time\n"
        "from kseg.cli import entry, signals\n"
        "signals.install(); entry.install_memory_hook()\n"
        "class Held:\n"
        "    def __del__(self):\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(0.05)\n"
        "try:\n"
        "    Held()\n"
        "    deadline = time.monotonic() + 10\n"
        "    while time.monotonic() < deadline: sum(range(1000))\n"
        "    print('never interrupted')\n"
        "except signals.Interrupted as exc:\n"
        "    print('interrupted again', exc.signum == signal.SIGTERM)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (proc.stdout, proc.stderr) == (b"interrupted again True\n", b"")


def test_demo_into_the_current_or_an_unwritable_directory(tmp_path):
    """`kseg demo .` in an empty directory is a usage error (the tree is renamed into place),
    not an internal error; a directory it cannot create is named as given (not the hidden temp
    sibling), one line, exit 8."""
    proc = run_kseg("demo", ".", cwd=tmp_path)
    assert proc.returncode == 16, proc.stderr
    assert b"give the directory by name" in proc.stderr and b"internal error" not in proc.stderr
    assert proc.stdout == b"" and list(tmp_path.iterdir()) == []
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    proc = run_kseg("demo", blocker / "demo")
    assert proc.returncode == 8, proc.stderr
    assert _err_lines(proc) == [
        f"kseg: {blocker / 'demo'}: cannot write the example tree: Not a directory"
    ]
    assert proc.stdout == b""


@pytest.mark.parametrize("sig", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_interrupted_repair_is_resumable(big_root, tmp_path, sig):
    """SIGINT/SIGTERM while a repair copies a large tail to the quarantine (before or after its
    manifest): no temp file, no half quarantine without a manifest, and the next run repairs."""
    root = tmp_path / "logs"
    shutil.copytree(big_root / "big-0", root / "big-0")
    first = sorted((root / "big-0").glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    data[100] ^= 0xFF  # the first batch is corrupt: everything after it goes to the quarantine
    first.write_bytes(bytes(data))
    proc = _interrupt(["verify", "--repair", root], root / "big-0", sig)
    assert proc.returncode & 32, proc.stderr
    assert _err_lines(proc)[-1] == "kseg: interrupted"
    assert not [p for p in tmp_path.rglob("*") if "kseg-tmp" in p.name]
    quarantine = tmp_path / "kseg-quarantine" / "logs"
    for qdir in quarantine.glob("*") if quarantine.is_dir() else []:
        assert (qdir / "manifest.json").is_file(), "a quarantine dir without its manifest"
    again = run_kseg("verify", "--repair", root)
    assert again.returncode in (0, 1), again.stdout + again.stderr
    assert run_kseg("verify", root).returncode == 0


@pytest.mark.spark
def test_interrupted_spark_job_exits_32_and_stops_the_jvm(tree):
    pytest.importorskip("pyspark")
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    proc = subprocess.Popen(
        [*kseg_command(), "spark", "stats", str(tree), "--master", "local[1]"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def children() -> list[int]:
        out = []
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == proc.pid:
                        out.append(int(d.name))
                except (OSError, ValueError, IndexError):
                    continue
        return out

    deadline = time.monotonic() + 60
    while not (kids := children()):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(2)  # the JVM is starting: the case where pyspark would leave it running
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=120)[1].decode()
    assert proc.returncode == 32, err
    assert err.splitlines()[-1] == "kseg: interrupted" and err.count("kseg:") == 1
    time.sleep(3)
    assert not [k for k in kids if Path(f"/proc/{k}").exists()], "the JVM outlived kseg"


# --- 2. nothing Kafka found; a missing path; a bad regex --------------------------------------


@pytest.fixture(scope="module")
def not_kafka(tmp_path_factory) -> Path:
    """Directories with nothing of Kafka's: config files, a dir named like a partition holding
    a README, and a real data dir buried deeper than roots are looked for."""
    base = tmp_path_factory.mktemp("notkafka")
    (base / "etc" / "dbus-1").mkdir(parents=True)
    (base / "etc" / "dbus-1" / "session.conf").write_text("<busconfig/>")
    (base / "etc" / "notes-1").mkdir()
    (base / "etc" / "notes-1" / "README").write_text("not a partition")
    (base / "etc" / "hosts").write_text("127.0.0.1 localhost\n")
    deep = base / "deep" / "a" / "b" / "c" / "kafka-logs"
    with kseg.LogWriter(deep / "orders-0") as w:
        w.append(_records(0, 3))
    return base


@pytest.mark.parametrize("args", PATH_COMMANDS + REPLICA_COMMANDS, ids=lambda a: "-".join(a))
@pytest.mark.parametrize("where", ["etc", "etc/notes-1", "deep", "/etc"])
def test_nothing_kafka_found_is_a_usage_error(not_kafka, args, where):
    path = where if where.startswith("/") else not_kafka / where
    proc = run_kseg(*args, path)
    assert proc.returncode == 16, proc.stdout
    assert proc.stdout == b""
    assert _err_lines(proc) == [
        f"kseg: {path}: no Kafka partition, segment or data file found under it "
        "(log.dirs roots are looked for up to 3 levels down)"
    ]


@pytest.mark.parametrize(
    "args", PATH_COMMANDS + REPLICA_COMMANDS + SPARK_COMMANDS, ids=lambda a: "-".join(a)
)
def test_missing_path_is_16_everywhere(tmp_path, args):
    proc = run_kseg(*args, tmp_path / "nope")
    assert proc.returncode == 16 and proc.stdout == b""
    assert _err_lines(proc) == [f"kseg: {tmp_path / 'nope'}: no such file or directory"]


@pytest.mark.parametrize("args", PATH_COMMANDS + REPLICA_COMMANDS, ids=lambda a: "-".join(a))
def test_a_uri_to_a_local_command_is_16_and_says_so(args):
    """`kseg verify s3://bucket/logs` used to say "s3:/bucket/logs: no such file or directory"
    (Path folds the `//`): a local command names the URI and where URIs are read."""
    proc = run_kseg(*args, "s3://bucket/kafka-logs")
    assert proc.returncode == 16 and proc.stdout == b""
    assert _err_lines(proc) == [
        "kseg: s3://bucket/kafka-logs: a URI: this command reads local paths "
        "(`kseg spark ...` reads URIs)"
    ]


@pytest.mark.parametrize(
    "args", PATH_COMMANDS + REPLICA_COMMANDS + SPARK_COMMANDS, ids=lambda a: "-".join(a)
)
def test_bad_topic_regex_is_16_everywhere(tree, args):
    proc = run_kseg(*args, tree, "--topic", "orders(")
    assert proc.returncode == 16 and proc.stdout == b""
    (line,) = _err_lines(proc)
    assert line.startswith("kseg: --topic: not a valid regular expression")


@pytest.mark.parametrize("args", PATH_COMMANDS + REPLICA_COMMANDS, ids=lambda a: "-".join(a))
def test_selection_matching_nothing_is_16(tree, args):
    proc = run_kseg(*args, tree, "--topic", "^no-such-topic$")
    assert proc.returncode == 16 and proc.stdout == b""
    assert "no partition matches --topic '^no-such-topic$'" in proc.stderr.decode()


@pytest.mark.parametrize(
    "args",
    [
        ["dump", "--limit", "-1"],
        ["dump", "--max-bytes", "-5"],
        ["dump", "--from-offset", "-3"],
        ["dump", "--to-offset", "-3"],
        ["dump", "--partition", "-1"],
        ["dump", "-f", "xml"],
        ["dump", "--from-time", "garbage"],
        ["seek", "--offset", "-1"],
        ["seek", "--time", "latest", "--now", "garbage"],
        ["seek", "--time", "99999999999999999999999"],
        ["seek", "--time", "latest", "--offset", "3"],
        ["verify", "--index-interval-bytes", "-1"],
        ["verify", "--dry-run"],
        ["index", "rebuild", "--segment-index-bytes", "-1"],
        ["spark", "stats", "--conf", "no-equals-sign"],
    ],
    ids=lambda a: " ".join(a),
)
def test_bad_option_values_are_16(tree, args):
    proc = run_kseg(*args, tree)
    assert proc.returncode == 16, proc.stderr
    assert proc.stdout == b"" and b"Invalid value" in proc.stderr


def test_root_without_partitions(tmp_path):
    """A broker root with only its root files: verify says what it checked (info), Spark jobs,
    which read partitions only, have nothing to read (16)."""
    root = tmp_path / "kafka-logs"
    root.mkdir()
    (root / "meta.properties").write_text("version=0\nbroker.id=1\n")
    proc = run_kseg("verify", root)
    assert proc.returncode == 0
    assert f"INFO no_segments {root}: log.dirs root without partition directories" in (
        proc.stdout.decode()
    )
    proc = run_kseg("spark", "stats", root)
    assert proc.returncode == 16 and proc.stdout == b""
    assert "no live partition directory to read" in proc.stderr.decode()


def test_unknown_file_and_wrong_file_kind(tree):
    proc = run_kseg("dump", "/etc/hostname" if Path("/etc/hostname").exists() else "/etc/passwd")
    assert proc.returncode == 16 and "not a Kafka file (by its name)" in proc.stderr.decode()
    # a checkpoint file: dump decodes it, the log commands say what they take instead
    ckpt = tree / "recovery-point-offset-checkpoint"
    assert run_kseg("dump", ckpt).returncode == 0
    for args in PATH_COMMANDS[1:] + REPLICA_COMMANDS:
        proc = run_kseg(*args, ckpt)
        assert proc.returncode == 16, args
        assert "this command takes a segment .log file" in proc.stderr.decode()
    # the file's kind is named with the right article ("an index file", not "a index file")
    index = next(tree.glob("*/*.index"))
    proc = run_kseg("verify", index)
    assert proc.returncode == 16 and ": an index file: " in proc.stderr.decode()


needs_nobody = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"),
    reason="runs kseg as nobody through setpriv (root bypasses permissions)",
)


@needs_nobody
@pytest.mark.parametrize("args", PATH_COMMANDS, ids=lambda a: "-".join(a))
def test_unreadable_input_is_8(tree, args):
    base = Path(tempfile.mkdtemp(prefix="kseg-contract-"))  # /tmp: nobody may enter it
    base.chmod(0o755)
    root = base / "logs"
    shutil.copytree(tree, root)
    os.system(f"chmod -R a+rX {root}")
    locked = root / "orders-1"
    locked.chmod(0)
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *kseg_command()]
    proc = subprocess.run([*nobody, *args, locked], capture_output=True, timeout=120)
    assert proc.returncode == 8, proc.stderr
    assert _err_lines(proc) == [f"kseg: {locked}: Permission denied"]
    # inside a root: the rest is still done, the unreadable partition named on stderr
    try:
        proc = subprocess.run([*nobody, *args, root], capture_output=True, timeout=120)
        assert proc.returncode & 8, proc.stderr
        assert str(locked) in proc.stderr.decode()
        # a path behind a directory nobody may enter: unreadable too, not "no such file"
        root.chmod(0)
        proc = subprocess.run([*nobody, *args, root / "orders-0"], capture_output=True)
        assert proc.returncode == 8
        assert _err_lines(proc) == [f"kseg: {root / 'orders-0'}: Permission denied"]
    finally:
        shutil.rmtree(base)


@pytest.mark.parametrize(
    "args", [("dump",), ("verify",), ("index", "check")], ids=lambda a: "-".join(a)
)
def test_every_command_ors_its_exit_codes(tree, tmp_path, args):
    """Invalid data in one file and an unreadable one in the same run: 4 | 8 = 12."""
    root = tmp_path / "logs"
    shutil.copytree(tree, root)
    log = root / "orders-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[100] ^= 0xFF  # inside the first batch's CRC-covered bytes
    log.write_bytes(bytes(data))
    os.mkfifo(root / "orders-1" / "00000000000000099999.log")
    proc = run_kseg(*args, root, timeout=120)
    assert proc.returncode == 12, proc.stderr
    assert b"named pipe" in proc.stderr and b"crc" in (proc.stdout + proc.stderr).lower()


# --- 3. partition dirs without a .log ---------------------------------------------------------


@pytest.fixture
def odd_root(tree, tmp_path) -> Path:
    """A root with every partition dir Kafka leaves without a .log, beside normal ones."""
    root = tmp_path / "logs"
    shutil.copytree(tree, root)
    (root / "empty-0").mkdir()
    only_idx = root / "onlyidx-0"
    only_idx.mkdir()
    for src in (tree / "orders-1").glob("00000000000000000000.*index"):
        shutil.copy(src, only_idx)
    snaps = root / "snaps-0"
    snaps.mkdir()
    shutil.copy(tree / "txn-0" / "leader-epoch-checkpoint", snaps)
    for src in (tree / "txn-0").glob("*.snapshot"):
        shutil.copy(src, snaps)
    (root / f"gone-0.{UUID}-delete").mkdir()
    deleted = root / f"gone-1.{UUID}-delete"
    deleted.mkdir()
    for src in (tree / "orders-1").glob("00000000000000000000.*index"):
        shutil.copy(src, deleted)
    return root


def test_verify_reports_partitions_without_log_and_goes_on(odd_root):
    proc = run_kseg("verify", odd_root, "-f", "json")
    evs = events(proc.stdout.decode())
    assert b"internal error" not in proc.stderr
    infos = {Path(e["file"]).name for e in evs if e.get("kind") == "no_segments"}
    assert infos >= {"empty-0", "onlyidx-0", "snaps-0", f"gone-0.{UUID}-delete"}
    orphans = {
        Path(e["file"]).parent.name
        for e in evs
        if e.get("kind") == "orphan_file" and e["severity"] == "info"
    }
    assert orphans == {"onlyidx-0", f"gone-1.{UUID}-delete"}
    # the rest of the root was checked: every segment of the normal partitions
    assert {Path(e["file"]).parent.name for e in evs if e["type"] == "segment"} >= {
        "orders-0",
        "txn-0",
        "upgrade-0",
    }
    # orphan index files are info: Kafka's LogLoader.loadSegmentFiles deletes them at start
    assert proc.returncode == 0
    assert evs[-1]["partitions"] == 7 + 5


@pytest.mark.parametrize("args", PATH_COMMANDS, ids=lambda a: "-".join(a))
def test_every_command_survives_partitions_without_log(odd_root, args):
    for path in [odd_root, *(p for p in odd_root.iterdir() if p.is_dir())]:
        proc = run_kseg(*args, path)
        assert b"internal error" not in proc.stderr, (path, proc.stderr)
        assert proc.returncode in (0, 4), (path, proc.returncode, proc.stderr)


# --- 4. directories of broker roots -----------------------------------------------------------


@pytest.fixture
def brokers(tree, tmp_path) -> Path:
    """Kafka's multi-broker quickstart: kafka-logs-1..3 (named like partitions of a topic
    "kafka-logs"), each a replica of the same partitions; broker 3's orders-0 lags."""
    base = tmp_path / "brokers"
    for n in (1, 2, 3):
        shutil.copytree(tree, base / f"kafka-logs-{n}")
    lagging = sorted((base / "kafka-logs-3" / "orders-0").glob("*.log"))[-1]
    for f in lagging.parent.glob(lagging.name[:20] + ".*"):
        f.unlink()
    return base


def test_broker_roots_named_like_partitions_are_roots(brokers):
    proc = run_kseg("verify", brokers, "-f", "json")
    evs = events(proc.stdout.decode())
    dirs = {e["log_dir"] for e in evs if e["type"] in ("segment", "finding")}
    assert dirs == {str(brokers / f"kafka-logs-{n}") for n in (1, 2, 3)}
    assert evs[-1]["partitions"] == 21  # 7 partitions x 3 brokers, none named kafka-logs-N
    assert not [e for e in evs if e.get("topic") == "kafka-logs"]
    # one root given directly is a root too, and then no log_dir (one root: nothing to tell)
    one = events(run_kseg("verify", brokers / "kafka-logs-2", "-f", "json").stdout.decode())
    assert one[-1]["partitions"] == 7 and not [e for e in one if "log_dir" in e]


def test_every_output_names_its_root(brokers):
    seek = run_kseg("seek", brokers, "--time", "earliest")
    lines = seek.stdout.decode().splitlines()
    assert seek.returncode == 0 and len(lines) == 21
    for n in (1, 2, 3):
        assert sum(f"[{brokers / f'kafka-logs-{n}'}]" in line for line in lines) == 7
    for args in (
        ["seek", "--time", "latest", "-f", "json"],
        ["index", "check", "-f", "json"],
        ["dump", "-f", "json", "--partition", "0", "--topic", "^orders$"],
    ):
        evs = events(run_kseg(*args, brokers).stdout.decode())
        assert evs and all("log_dir" in e for e in evs if e["type"] != "summary"), args


def test_reset_csv_one_row_per_partition_and_replicas_checked(brokers):
    proc = run_kseg("seek", brokers, "--time", "latest", "-f", "reset-csv")
    rows = proc.stdout.decode().splitlines()
    assert proc.returncode == 0
    assert len(rows) == 7 == len({r.rsplit(",", 1)[0] for r in rows})
    assert all(re.fullmatch(r"[\w.-]+,\d+,\d+", r) for r in rows)  # kafka-consumer-groups' form
    leader = run_kseg("seek", brokers / "kafka-logs-1", "--time", "latest", "-f", "reset-csv")
    assert sorted(rows) == sorted(leader.stdout.decode().splitlines())
    (warning,) = _err_lines(proc)
    assert warning.startswith("kseg: orders-0: replicas disagree") and "kafka-logs-3" in warning


def test_real_directory_of_roots_nested(real_root):
    """shared/real: four brokers' data dirs one or two levels further down."""
    evs = events(run_kseg("verify", real_root, "-f", "json").stdout.decode())
    roots = {e["log_dir"] for e in evs if e["type"] == "segment"}
    assert roots == {
        str(real_root / p)
        for p in (
            "SharaWeil__kafka-0.11.0/data",
            "kafka-4.1.0-dev/data",
            "seanorth__kafka-server/kafka-logs",
            "xpxwo100__bullShit/tmp/kafka-logs",
        )
    }
    assert evs[-1]["partitions"] == 25 and evs[-1]["exit_code"] == 0


@pytest.mark.spark
def test_spark_stats_keeps_replicas_apart(spark_cli, brokers):
    proc = spark_cli.run("spark", "stats", brokers, "-f", "json", "--master", "local[2]")
    rows = [e for e in events(proc.stdout.decode()) if e["type"] == "stats"]
    assert proc.returncode == 0, proc.stderr
    assert len(rows) == 21  # 7 partitions x 3 replicas, none dropped
    assert {r["log_dir"] for r in rows} == {str(brokers / f"kafka-logs-{n}") for n in (1, 2, 3)}


@pytest.mark.spark
def test_spark_export_says_when_replicas_are_read(spark_cli, brokers, tmp_path):
    out = tmp_path / "out"
    proc = spark_cli.run(
        "spark",
        "export",
        brokers,
        "--out",
        out,
        "--topic",
        "^orders$",
        "--master",
        "local[2]",
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "partitions have replicas in several log dirs" in proc.stderr.decode()


# --- 5./6. exit-code table, --version, completion, examples, where JSON comes from ------------


def test_top_level_help_lists_every_exit_code():
    out = run_kseg("--help").stdout.decode()
    for code, text in TABLE:
        assert re.search(rf"^\s+{code}\s+{re.escape(text)}$", out, re.M), code
    assert [c for c, _ in TABLE] == [0, 1, 4, 8, 16, 32]


@pytest.mark.parametrize("where", ["README.md", "docs/conventions.md"])
def test_readme_conventions_show_the_table(where):
    text = (README.parent / where).read_text()
    for code, text_ in TABLE:
        assert f"| `{code}` | {text_} |" in text, code


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag):
    proc = run_kseg(flag)
    assert proc.returncode == 0 and proc.stderr == b""
    from kseg import kernel

    assert proc.stdout.decode() == f"kseg {kseg.__version__}; {kernel.describe()}\n"
    forced = run_kseg(flag, env={**os.environ, "KSEG_KERNEL": "python"})
    assert (
        forced.stdout.decode() == f"kseg {kseg.__version__}; kernel: python (KSEG_KERNEL=python)\n"
    )


def test_shell_completion():
    proc = run_kseg("--show-completion", "bash")
    assert proc.returncode == 0 and b"_kseg_completion" in proc.stdout
    env = {
        **os.environ,
        "_KSEG_COMPLETE": "complete_bash",
        "COMP_WORDS": "kseg ver",
        "COMP_CWORD": "1",
    }
    assert run_kseg(env=env).stdout.decode().split() == ["verify"]


@pytest.mark.parametrize(
    "command",
    [
        ["dump"],
        ["verify"],
        ["restore"],
        ["seek"],
        ["demo"],
        ["index", "rebuild"],
        ["index", "check"],
        ["txn"],
        ["replicas"],
        ["schemas"],
        ["spark", "export"],
        ["spark", "verify"],
        ["spark", "stats"],
        ["spark", "replicas"],
    ],
    ids=lambda c: "-".join(c),
)
def test_every_command_help_has_an_example(command):
    out = run_kseg(*command, "--help").stdout.decode()
    example = out.split("Example:", 1)[1]
    assert re.search(rf"^\s+kseg {' '.join(command)} ", example, re.M), out


def test_json_objects_from_a_partition_carry_topic_and_partition(tree):
    checks = [
        ["dump", "-f", "json", tree / "txn-0"],
        ["dump", "-f", "json", tree / "orders-0" / "00000000000000000000.log"],
        ["verify", "-f", "json", tree],
        ["seek", "-f", "json", "--time", "earliest", tree],
        ["seek", "-f", "json", "--offset", "3", tree],
        ["index", "check", "-f", "json", tree],
        ["index", "rebuild", "--dry-run", "-f", "json", tree],
    ]
    for args in checks:
        evs = events(run_kseg(*args).stdout.decode())
        from_partitions = [
            e
            for e in evs
            if e["type"] != "summary" and not (e.get("file") and Path(e["file"]).parent == tree)
        ]  # everything but the summary and the root's own files
        assert from_partitions, args
        for e in from_partitions:
            assert isinstance(e["topic"], str) and isinstance(e["partition"], int), (args, e)
            assert "log_dir" not in e  # one root: stable, absent


def test_json_record_line_equals_its_dict(tree):
    """The fast JSON path places topic/partition exactly as the dict path does."""
    fast = run_kseg("dump", "-f", "json", tree / "orders-0", "--limit", "5").stdout
    recs = [orjson.loads(line) for line in fast.splitlines() if b'"type":"record"' in line]
    assert recs and all(list(r)[:4] == ["type", "file", "topic", "partition"] for r in recs)


def test_in_process_run_restores_the_hosts_signal_handlers(tree, monkeypatch, capsysbinary):
    """kseg.cli.entry.run_app inside another program (pytest here) hands its handlers back."""
    from tests.helpers import run_cli

    before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    assert run_cli(monkeypatch, capsysbinary, "verify", tree)[0] == 0
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == before


def test_seek_on_a_segment_outside_a_partition_dir(tree, tmp_path):
    """A .log in a directory not named <topic>-<partition>: JSON topic/partition are null (as
    in dump and verify), the text line names the directory, and reset-csv gives no row
    (it had printed `loose,-1,0`, which kafka-consumer-groups would take as a partition)."""
    loose = tmp_path / "loose"
    loose.mkdir()
    log = loose / "00000000000000000000.log"
    shutil.copy(tree / "orders-0" / log.name, log)
    proc = run_kseg("seek", "-f", "json", "--time", "0", log)
    assert proc.returncode == 0, proc.stderr
    (ev,) = events(proc.stdout)
    assert ev["topic"] is None and ev["partition"] is None and ev["offset"] == 0
    proc = run_kseg("seek", "-f", "json", "--offset", "3", log)
    (ev,) = events(proc.stdout)
    assert ev["topic"] is None and ev["partition"] is None and ev["status"] == "found"
    proc = run_kseg("seek", "--time", "0", log)
    assert proc.stdout.decode().startswith(f"{loose}: offset 0 "), proc.stdout
    proc = run_kseg("seek", "-f", "reset-csv", "--time", "0", log)
    assert proc.returncode == 0 and proc.stdout == b"", proc.stdout
    assert f"kseg: {loose}: not named <topic>-<partition>: no reset-csv row" in proc.stderr.decode()


def test_dump_of_a_file_outside_a_partition_dir_has_null_topic(tree, tmp_path):
    """README: objects from a partition carry topic and partition, null when the file's
    directory is not named like a partition (dump left the keys out); a root's own files
    still carry neither."""
    loose = tmp_path / "loose"
    loose.mkdir()
    for name in ("00000000000000000000.log", "00000000000000000000.index"):
        shutil.copy(tree / "orders-0" / name, loose / name)
        proc = run_kseg("dump", "-f", "json", "--limit", "3", loose / name)
        assert proc.returncode == 0, proc.stderr
        evs = events(proc.stdout.decode())
        assert {e["type"] for e in evs} > {"file"}
        for e in evs:
            assert "topic" in e and e["topic"] is None and e["partition"] is None, e
    for e in events(run_kseg("dump", "-f", "json", tree / "meta.properties").stdout.decode()):
        assert "topic" not in e and "partition" not in e, e


def test_a_swallowed_interrupt_still_ends_the_run_as_interrupted(tree):
    """An interrupt that cleanup code replaced by its own error, which the command then
    reported as a finding and carried on past, is still an interrupt: 32 OR-ed with the
    command's own status, and the one line."""
    import sys

    code = (
        "import sys; from kseg.cli import signals; from kseg.cli.entry import main;"
        "signals._received.append(2);"  # what the handler records before raising
        "sys.argv = ['kseg', 'verify', sys.argv[1]]; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tree / "orders-0")], capture_output=True, timeout=120
    )
    assert proc.returncode == 32, proc
    assert _err_lines(proc) == ["kseg: interrupted"]


def test_an_interrupt_inside_a_partition_keeps_what_its_finished_segments_found(tmp_path):
    """Findings come out per partition; an interrupt while a later segment of the same
    partition is read still reports (and ORs into the status) what the segments before it
    found: 36, the finding on stdout."""
    root = tmp_path / "logs"
    with kseg.LogWriter(root / "bigc-0", segment_bytes=1 << 20) as w:
        first = w.append(_records(0, 5))
        for b in range(1, 3000):
            w.append(_records(b))
    logs = sorted((root / "bigc-0").glob("*.log"))
    data = bytearray(logs[0].read_bytes())
    data[first.position + 70] ^= 0xFF  # a CRC error in the first segment
    logs[0].write_bytes(bytes(data))
    proc = _interrupt(["verify", "--deep", root], logs[len(logs) // 2], signal.SIGINT)
    assert proc.returncode == 32 | 4, proc.stderr
    assert _err_lines(proc) == ["kseg: interrupted"]
    assert b"crc_mismatch" in proc.stdout and str(logs[0]).encode() in proc.stdout
