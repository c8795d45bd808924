"""A selection selects partitions (kseg.storage.tree.resolve, the one place it is decided): with
--topic/--partition no command shows a log.dirs root's own files (checkpoints, meta.properties,
bootstrap.checkpoint, whose records have no topic); without one, dump shows them and --count
counts the records it shows; a root file given as a PATH is always shown. Every command that
takes --topic/--partition (dump, verify, seek, stats, index check, Spark's planner) works on the
same partitions. Through the real `kseg` entry point as a subprocess."""

from __future__ import annotations

import shutil

import pytest

from kseg.format.checkpoint import TopicPartitionOffset, encode_offset_checkpoint
from kseg.spark.planning import Prune, find_partitions
from kseg.storage import files as F
from kseg.storage import tree as T
from tests.helpers import events, run_kseg

SELECTIONS = [
    ("--topic", "^orders$"),
    ("--partition", "1"),
    ("--topic", "o", "--partition", "0"),
    ("--topic", ""),  # a selection that selects every partition is still a selection
]
SUMMARIES = {"summary", "match_total", "topic_stats", "root_stats", "hour_stats"}


def _json(*args, ok=(0,)) -> list[dict]:
    proc = run_kseg(*args, "-f", "json")
    assert proc.returncode in ok, proc.stderr
    return events(proc.stdout)


def _root_file(path: str | None) -> bool:
    return path is not None and F.parse_partition_dir(path.rsplit("/", 2)[-2]) is None


def _selected(root, sel: tuple) -> set[tuple[str, int]]:
    topic = sel[sel.index("--topic") + 1] if "--topic" in sel else None
    part = int(sel[sel.index("--partition") + 1]) if "--partition" in sel else None
    lay = T.layout(str(root))
    return {(n.topic, n.partition) for _, _, n in T.select(lay.partitions, topic, part)}


@pytest.mark.parametrize(
    ("sel", "extra"),
    list(
        zip(
            SELECTIONS,
            [
                (),
                ("--value-contains", "order"),
                ("--from-offset", "0"),
                ("--skip-record-metadata",),
            ],
            strict=True,
        )
    ),
    ids=" ".join,
)
def test_dump_with_a_selection_shows_no_root_file(tree_with_bootstrap, sel, extra):
    evs = _json("dump", tree_with_bootstrap, *sel, *extra)
    assert evs
    for e in evs:
        assert not _root_file(e.get("file")), e
        assert e.get("topic") is not None, e
    assert {(e["topic"], e["partition"]) for e in evs} <= _selected(tree_with_bootstrap, sel)
    counted = _json("dump", tree_with_bootstrap, *sel, *extra, "--count")
    records = [e for e in evs if e["type"] == "record"]
    assert counted[-1] == {
        "type": "match_total",
        "matches": len(records),
        "partitions": len(_selected(tree_with_bootstrap, sel)),
    }


def test_without_a_selection_dump_shows_and_counts_the_root_files(tree_with_bootstrap):
    root = tree_with_bootstrap
    boot = str(root / "bootstrap.checkpoint")
    evs = _json("dump", root, "--value-contains", "orders")
    records = [e for e in evs if e["type"] == "record"]
    assert records and {e["file"] for e in records} == {boot}  # a TopicRecord names `orders`
    counted = _json("dump", root, "--value-contains", "orders", "--count")
    assert {"type": "match_count", "file": boot, "matches": len(records)} in counted
    assert counted[-1]["matches"] == len(records)
    plain = _json("dump", root)
    assert {e["file"] for e in plain if e["type"] == "file"} >= {
        str(root / n) for n in T.ROOT_FILE_NAMES if (root / n).exists()
    }
    everything = _json("dump", root, "--count")
    assert everything[-1]["matches"] == sum(e["type"] == "record" for e in plain)


def test_a_root_file_given_as_a_path_is_shown_with_a_selection(tree_with_bootstrap):
    root = tree_with_bootstrap
    boot = root / "bootstrap.checkpoint"
    evs = _json("dump", root, boot, "--topic", "^orders$", "--value-contains", "orders")
    records = [e for e in evs if e["type"] == "record"]
    assert records and {e["file"] for e in records} == {str(boot)}
    counted = _json(
        "dump", root, boot, "--topic", "^orders$", "--value-contains", "orders", "--count"
    )
    assert {"type": "match_count", "file": str(boot), "matches": len(records)} in counted


@pytest.mark.parametrize("sel", SELECTIONS, ids=" ".join)
def test_every_command_works_on_the_same_partitions(tree_with_bootstrap, sel):
    root = tree_with_bootstrap
    want = _selected(root, sel)
    runs = {
        "dump --count": _json("dump", root, *sel, "--count"),
        "verify": _json("verify", root, *sel),
        "seek": _json("seek", root, *sel, "--time", "latest"),
        "stats": _json("stats", root, *sel),
        "index check": _json("index", "check", root, *sel),
    }
    for what, evs in runs.items():
        for e in evs:
            assert not _root_file(e.get("file")), (what, e)
        got = {(e["topic"], e["partition"]) for e in evs if e["type"] not in SUMMARIES}
        assert got == want, what
    topic = sel[sel.index("--topic") + 1] if "--topic" in sel else None
    parts = frozenset({int(sel[sel.index("--partition") + 1])}) if "--partition" in sel else None
    planned = find_partitions([str(root)], Prune(topic=topic, partitions=parts))
    assert {(t, p) for _, t, p, _ in planned} == want


def test_verify_with_a_selection_checks_only_the_selected_checkpoint_entries(
    tree_with_bootstrap, tmp_path
):
    """Root checkpoints: an entry past a selected partition's log end is that partition's
    finding, and stays; an unselected partition's entry and a problem of the file as a whole
    (a root file's own) appear only without a selection."""
    root = tmp_path / "logs"
    shutil.copytree(tree_with_bootstrap, root)
    (root / "recovery-point-offset-checkpoint").write_bytes(
        encode_offset_checkpoint(
            [TopicPartitionOffset("orders", 0, 10_000), TopicPartitionOffset("txn", 0, 10_000)]
        )
    )
    (root / "cleaner-offset-checkpoint").write_bytes(b"0\n1\nnot a checkpoint line\n")

    def findings(*sel):
        evs = _json("verify", root, *sel, ok=(0, 4))
        return {
            (e["file"].rsplit("/", 1)[-1], e["topic"], e["partition"])
            for e in evs
            if e["type"] == "finding" and e["kind"] != "index_padding"
        }

    everything = findings()
    assert everything >= {
        ("recovery-point-offset-checkpoint", "orders", 0),
        ("recovery-point-offset-checkpoint", "txn", 0),
        ("cleaner-offset-checkpoint", None, None),
    }
    assert findings("--topic", "^orders$") == {("recovery-point-offset-checkpoint", "orders", 0)}
    assert findings("--partition", "1") == set()


def test_real_bootstrap_checkpoint_is_left_out_by_a_selection(real_root):
    data = real_root / "kafka-4.1.0-dev" / "data"
    evs = _json("dump", data, "--topic", "^dev-none$", "--value-contains", "x")
    records = [e for e in evs if e["type"] == "record"]
    assert records and {e["topic"] for e in records} == {"dev-none"}
    assert not any(_root_file(e.get("file")) for e in evs)
    counted = _json("dump", data, "--topic", "^dev-none$", "--value-contains", "x", "--count")
    assert counted[-1]["matches"] == len(records)
    unselected = _json("dump", data, "--value-contains", "x")
    boot = str(data / "bootstrap.checkpoint")
    shown = sum(e["type"] == "record" and e["file"] == boot for e in unselected)
    assert shown > 0
    total = _json("dump", data, "--value-contains", "x", "--count")
    assert {"type": "match_count", "file": boot, "matches": shown} in total
    assert total[-1]["matches"] == sum(e["type"] == "record" for e in unselected)
