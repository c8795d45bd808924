"""Start-up: a command imports only what it needs. Checked on the real entry point with
``python -X importtime`` (which names every module the process imported), not timed: the
times are bench/run.py's (``--only startup``). Each list of modules a command must not import
comes with a command that does import them, so a check that could no longer fail (a renamed
module, a parse that sees nothing) fails instead."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kseg.format.record import Record
from kseg.storage.writer import LogWriter

# never needed outside `kseg spark`: rendering libraries, Arrow/Spark, data frames, other readers
HEAVY = ("rich", "tabulate", "pyarrow", "pyspark", "numpy", "pandas", "kafka", "aiokafka")
SPARK = ("kseg.cli.commands.spark", "kseg.spark", "kseg.cli.spark_submit")
# what only a repair (or an index rebuild) writes with: locks, quarantine manifests, space checks
REPAIR = (
    "kseg.repair",  # plan, apply, actions, resume, quarantine, faults, ...
    "kseg.repair.manifest",
    "kseg.storage.locking",
    "kseg.repair.restore",
    "kseg.storage.lock",
    "kseg.storage.space",
)
RENDER = ("kseg.render.text", "kseg.render.json", "kseg.render.table", "kseg.render.csv")
# the internal topics' record schemas (dump --decoder, or a __consumer_offsets-like topic)
SCHEMAS = ("kseg.format.schema", "kseg.format.coordinator", "kseg.format.metadata")
# record search and kcat's format strings (dump --key ..., --format-string)
SEARCH = ("kseg.dump.search", "kseg.dump.format_string")
# `kseg offsets`: __consumer_offsets replayed (none of it is seek's: the reset file is kseg.seek.reset_csv)
OFFSETS = (
    "kseg.offsets.run",
    "kseg.offsets.replay",
    "kseg.offsets.groups",
    "kseg.offsets.placement",
    "kseg.offsets.expiry",
    "kseg.offsets.as_of",
    "kseg.offsets.share_state",
)
# a file kind the one-batch partition does not have (a .snapshot): its reader is not imported
SNAPSHOT = "kseg.format.producer_snapshot"


def imported(*args) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kseg", *map(str, args)],
        capture_output=True,
        timeout=120,
    )
    names = set()
    for line in proc.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "kseg.cli" in names, proc.stderr[-2000:]  # the parse saw the imports
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # the command ran (1: repaired)
    return names


def under(names: set[str], prefixes) -> list[str]:
    """The modules of ``names`` that are one of ``prefixes`` or inside one of them."""
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes))


@pytest.fixture(scope="module")
def one_batch(tmp_path_factory):
    pdir = tmp_path_factory.mktemp("startup") / "t-0"
    with LogWriter(pdir) as w:
        w.append([Record(b"k", b"v", 1_700_000_000_000, [], 0)])
    return pdir


@pytest.mark.parametrize(
    "args", [("verify",), ("verify", "-f", "json"), ("index", "check"), ("dump", "--batches-only")]
)
def test_commands_import_no_heavy_modules(one_batch, args):
    names = imported(*args, one_batch)
    heavy = sorted(n for n in names if n.split(".")[0] in HEAVY)
    assert heavy == []


# (arguments before the partition, modules it must not import, modules it must import)
COMMANDS = {
    "verify": (
        ("verify",),
        (
            *REPAIR,
            *SPARK,
            *SCHEMAS,
            "kseg.index.run",
            "kseg.dump",
            "kseg.seek",
            "kseg.offsets",
            "kseg.stats",
        )
        + tuple(r for r in RENDER if r != "kseg.render.text"),
        ("kseg.verify.run", "kseg.render.text"),
    ),
    "verify-plain": (  # no snapshot and no repair: the rebuild's and snapshot reader's modules
        ("verify",),
        ("kseg.index.rebuild", SNAPSHOT, "kseg.storage.atomic"),
        ("kseg.verify.partition",),
    ),
    "verify-json": (
        ("verify", "-f", "json"),
        (*REPAIR, *SPARK, "kseg.render.text", "kseg.render.table"),
        ("kseg.verify.run", "kseg.render.json"),
    ),
    "verify-repair": (  # the control: a repair does import them; a dry run only its plan
        ("verify", "--repair", "--dry-run"),
        (*SPARK, "kseg.repair.apply", "kseg.storage.space"),
        ("kseg.repair.plan", "kseg.repair.manifest", "kseg.index.rebuild"),
    ),
    "verify-repair-write": (  # the control for the writing modules (takes the log dir's .lock)
        ("verify", "--repair"),
        SPARK,
        ("kseg.repair.apply", "kseg.storage.locking", "kseg.storage.lock", "kseg.storage.space"),
    ),
    "dump-json": (
        ("dump", "-f", "json"),
        (
            *REPAIR,
            *SPARK,
            *SCHEMAS,
            SNAPSHOT,
            *SEARCH,
            "kseg.verify",
            "kseg.render.text",
            "kseg.render.table",
        ),
        ("kseg.dump.run", "kseg.render.json", "kseg.render.dump_json"),
    ),
    "dump-search": (  # the control: a filter and --format-string do import them
        ("dump", "--key", "k", "--format-string", "%k"),
        (*REPAIR, *SPARK, *SCHEMAS, SNAPSHOT, "kseg.verify", "kseg.render.table"),
        SEARCH,
    ),
    "dump-batches": (
        ("dump", "--batches-only"),
        (
            *REPAIR,
            *SPARK,
            *SCHEMAS,
            SNAPSHOT,
            *SEARCH,
            "kseg.verify",
            "kseg.render.json",
            "kseg.render.dump_json",
            "kseg.render.table",
        ),
        ("kseg.dump.run", "kseg.render.text"),
    ),
    "seek": (
        ("seek", "--time", "latest"),
        (
            *REPAIR,
            *SPARK,
            *SCHEMAS,
            "kseg.verify",
            "kseg.dump",
            "kseg.render.json",
            *OFFSETS,
        ),  # fmt: skip
        ("kseg.seek.run", "kseg.render.text"),
    ),
    "stats": (
        ("stats",),
        (*REPAIR, *SPARK, *SCHEMAS, "kseg.verify", "kseg.dump", "kseg.render.plot", "matplotlib"),
        ("kseg.stats.stats", "kseg.render.text"),
    ),
    "stats-plot": (  # the control: --plot does import matplotlib (the picture goes to a temp dir)
        ("stats", "--plot", "{tmp}/p.png"),
        (*REPAIR, *SPARK),
        ("kseg.render.plot", "matplotlib"),
    ),
    "index-check": (
        ("index", "check"),
        (*REPAIR, *SPARK, "kseg.index.rebuild", "kseg.storage.atomic", "kseg.dump"),
        ("kseg.index.run", "kseg.verify.index_check"),
    ),
    "index-rebuild": (  # the control for index check's
        ("index", "rebuild", "--dry-run"),
        SPARK,
        ("kseg.index.rebuild", "kseg.storage.lock"),
    ),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_imports_only_what_it_needs(one_batch, name, tmp_path):
    args, absent, present = COMMANDS[name]
    if name == "stats-plot":
        pytest.importorskip("matplotlib", reason="--plot needs the plot extra")
    names = imported(*(a.format(tmp=tmp_path) for a in args), one_batch)
    assert under(names, absent) == []
    if name != "stats-plot":  # matplotlib brings numpy: asked for
        assert under(names, HEAVY) == []
    assert [p for p in present if p not in names] == []


def test_version_and_help_import_no_command():
    """--version names the kernel and nothing else; --help lists every command (`spark` too:
    its help is kseg.cli.commands.spark's) without reading anything or importing Spark or rich."""
    version = imported("--version")
    assert "kseg.kernel" in version
    commands = (
        "kseg.storage",
        "kseg.verify",
        "kseg.dump",
        "kseg.seek",
        "kseg.offsets",
        "kseg.stats",
        "kseg.format.batch",
    )
    assert under(version, (*commands, *SPARK, *HEAVY, "kseg.render.fields")) == []
    help_ = imported("--help")
    assert "kseg.cli.commands.spark" in help_
    assert under(help_, (*commands, "kseg.spark", *HEAVY)) == []


def test_spark_help_imports_no_spark(one_batch):
    """`kseg spark export --help` is kseg.cli.commands.spark's options: no JVM, no Arrow."""
    names = imported("spark", "export", "--help")
    assert "kseg.cli.commands.spark" in names
    assert under(names, ("pyspark", "pyarrow", "kseg.spark", "kseg.verify", "kseg.storage")) == []


def test_every_module_named_here_exists():
    """A renamed module would make its absence trivially true: every kseg name above is real."""
    import importlib.util

    named = {*SPARK, *REPAIR, *RENDER, *SCHEMAS, *SEARCH, *OFFSETS, SNAPSHOT}
    for _args, absent, present in COMMANDS.values():
        named.update(absent, present)
    missing = sorted(
        n for n in named if n.startswith("kseg") and importlib.util.find_spec(n) is None
    )
    assert missing == []


def test_offsets_imports_only_what_it_needs(tmp_path):
    """`kseg offsets` reads __consumer_offsets with the coordinator schemas and nothing of
    verify, repair, dump or Spark; the other commands never import it (seek's list above)."""
    from kseg.fixtures.offsets import GROUP, write_offsets_partition

    write_offsets_partition(tmp_path / "__consumer_offsets-0")
    names = imported("offsets", tmp_path, "--group", GROUP)
    assert under(names, (*REPAIR, *SPARK, *HEAVY, "kseg.verify", "kseg.dump")) == []
    assert {*OFFSETS, "kseg.format.coordinator"} <= names


# one parser, typer, for every command line; the rich help formatting it can use is imported
# only for help (rich_markup_mode=None: not even then), never to run a command
TYPER = ("typer", "click")
RICH_HELP = ("rich", "typer.rich_utils", "tabulate")


@pytest.mark.parametrize(
    "args",
    [("verify",), ("verify", "-f", "json"), ("dump", "-f", "json"), ("dump", "--batches-only")]
    + [("seek", "--time", "latest"), ("index", "check"), ("stats",)],
)
def test_common_commands_import_no_rich(one_batch, args):
    names = imported(*args, one_batch)
    assert "typer" in names  # the control: the command line was typer's
    assert under(names, RICH_HELP) == []


def test_version_imports_no_rich():
    names = imported("--version")
    assert "typer" in names
    assert under(names, RICH_HELP) == []


def test_help_and_usage_errors_do_import_typer(one_batch):
    """Help and usage errors are typer's, as every command line is."""
    assert "typer" in imported("--help")
    assert "typer" in imported("verify", "--help")
    assert "typer" in imported("index", "check", one_batch, "--help")
