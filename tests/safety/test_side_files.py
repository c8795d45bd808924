"""Issue 35, item 4: the files beside the segments never cost their size. A sparse 4 GiB
`.index`, a 3 GiB `leader-epoch-checkpoint`, a 2 GiB producer snapshot, a 1 GiB
`partition.metadata`, root checkpoint files... (made with kseg's writer, then ``os.truncate``:
no disk is used) were read whole (up to 20 GB of memory). Indexes are now read in slices on
demand; the small files whole only up to the largest Kafka writes (kseg.storage.side_files),
a larger one being one invalid_file error naming its size, never read."""

from __future__ import annotations

import os
import shutil

import pytest

from kseg.fixtures.tree import build_tree
from kseg.storage.side_files import BOUNDS
from tests.helpers import events

from .limits import run_with_rss

MIB, GIB = 1 << 20, 1 << 30
KERNELS = ("rust", "python")
RSS_BOUND = 200 * MIB  # the files are 1 to 4 GiB
MAX_INDEX = (1 << 31) - 1
SEG = "00000000000000000054"

# name -> (file under the root, size, verify's exit code, (kind, severity, position) of the
# verify finding about it, what `kseg dump FILE` says on stderr (None: nothing))
CASES = {
    "index": (
        f"orders-0/{SEG}.index",
        4 * GIB,
        4,
        ("index_mismatch", "error", MAX_INDEX),
        f"at byte {MAX_INDEX}: invalid_index: index file of {4 * GIB} bytes: larger than Kafka"
        " can open",
    ),
    "timeindex": (
        f"orders-0/{SEG}.timeindex",
        4 * GIB,
        4,
        ("index_mismatch", "error", MAX_INDEX),
        f"at byte {MAX_INDEX}: invalid_index: time index file of {4 * GIB} bytes",
    ),
    "txnindex": (
        "txn-0/00000000000000000047.txnindex",
        2 * GIB,
        0,
        ("invalid_index", "warning", 2 * GIB - 2 * GIB % 34),
        f"invalid_index: transaction index size {2 * GIB} is not a multiple of 34",
    ),
    "leader-epoch-checkpoint": (
        "orders-0/leader-epoch-checkpoint",
        3 * GIB,
        4,
        ("invalid_file", "error", 64 * MIB),
        f"at byte {64 * MIB}: invalid_file: {3 * GIB} bytes: larger than any"
        " leader-epoch-checkpoint Kafka writes (at most 67108864 bytes here); not read",
    ),
    "snapshot": (
        "orders-0/00000000000000000111.snapshot",
        2 * GIB,
        0,
        ("invalid_file", "warning", 64 * MIB),
        f"invalid_file: {2 * GIB} bytes: larger than any producer snapshot Kafka writes",
    ),
    "partition.metadata": (
        "orders-0/partition.metadata",
        GIB,
        4,
        ("invalid_file", "error", 4096),
        f"at byte 4096: invalid_file: {GIB} bytes: larger than any partition.metadata",
    ),
    "recovery-point-offset-checkpoint": (
        "recovery-point-offset-checkpoint",
        GIB,
        4,
        ("invalid_file", "error", 64 * MIB),
        f"invalid_file: {GIB} bytes: larger than any offset checkpoint Kafka writes",
    ),
    "meta.properties": (
        "meta.properties",
        GIB,
        0,
        None,  # verify does not read it
        f"at byte 65536: invalid_file: {GIB} bytes: larger than any meta.properties",
    ),
}


@pytest.fixture(scope="module")
def clean_tree(tmp_path_factory):
    return build_tree(tmp_path_factory.mktemp("side") / "logs")


def _tree_with(clean_tree, tmp_path, *names):
    root = tmp_path / "logs"
    shutil.copytree(clean_tree, root)
    for name in names:
        rel, size, *_ = CASES[name]
        os.truncate(root / rel, size)
    return root


def _run(*args, kernel: str):
    rc, out, err, rss = run_with_rss(*args, timeout=60, env=dict(os.environ, KSEG_KERNEL=kernel))
    text = err.decode(errors="replace")
    assert rc >= 0, f"killed by signal {-rc}"
    assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    assert rss < RSS_BOUND, f"peak RSS {rss >> 20} MiB"
    return rc, out.decode(errors="replace"), text


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_verify_reports_a_huge_side_file_without_reading_it(clean_tree, tmp_path, name, kernel):
    root = _tree_with(clean_tree, tmp_path, name)
    rel, _size, code, finding, _ = CASES[name]
    rc, out, err = _run("verify", root, "-f", "json", kernel=kernel)
    assert rc == code, (out[-1000:], err[-500:])
    if finding is not None:
        about = [
            (e["kind"], e["severity"], e["position"])
            for e in events(out)
            if e["type"] == "finding" and e["file"] == str(root / rel)
        ]
        assert finding in about, about


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_dump_of_a_huge_side_file_is_one_error_line(clean_tree, tmp_path, name, kernel):
    root = _tree_with(clean_tree, tmp_path, name)
    rel, _size, _code, _finding, said = CASES[name]
    rc, out, err = _run("dump", root / rel, kernel=kernel)
    assert rc == 4
    lines = [line for line in err.splitlines() if line.startswith("kseg: ")]
    assert len(lines) == 1 and str(root / rel) in lines[0] and said in lines[0], err


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize(
    "args",
    [
        ("dump", "{root}", "-f", "json"),
        ("seek", "{root}/orders-0", "--offset", "60"),
        ("stats", "{root}"),
        ("index", "check", "{root}"),
        ("index", "rebuild", "--dry-run", "{root}"),
        ("verify", "--repair", "--dry-run", "{root}"),
        ("offsets", "{root}", "--list"),
    ],
    ids=lambda a: "-".join(a[:2]),
)
def test_every_command_on_a_tree_of_huge_side_files(clean_tree, tmp_path, args, kernel):
    """Every side file of the table at once: each command stays small and finishes."""
    root = _tree_with(clean_tree, tmp_path, *CASES)
    rc, out, err = _run(*(a.format(root=root) for a in args), kernel=kernel)
    assert rc in (0, 4, 16), (rc, err[-500:])


def test_the_bounds_are_above_what_kafka_writes():
    """Each bound holds the largest file of its kind a broker writes (module docstring)."""
    from kseg.storage import files as F

    assert BOUNDS[F.PARTITION_METADATA][0] >= len("version: 0\ntopic_id: " + "A" * 22 + "\n")
    line = len("t" * 249) + len(" -2147483648 -9223372036854775808\n")
    assert BOUNDS[F.OFFSET_CHECKPOINT][0] // line >= 200_000
    assert BOUNDS[F.LEADER_EPOCH_CHECKPOINT][0] // len("2147483647 9223372036854775807\n") >= 2e6
    assert BOUNDS[F.SNAPSHOT][0] // 46 >= 1_000_000
