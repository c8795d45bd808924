"""kseg's `kafka_recovery` prediction against what a real Kafka 4.1.0 broker's recovery does.

Damaged copies of REAL data dirs (../shared/real: written by Kafka 4.1.0, 0.11 and 0.10.1
brokers) are recovered by one broker start after an unclean shutdown (tests/broker.py
``recover_with_kafka``: no recovery point, so Kafka's ``LogLoader.recoverLog`` runs
``LogSegment.recover`` over every segment). For each partition the `.log` files the broker left,
with their sizes, must be exactly what kseg's prediction says Kafka leaves: a torn tail and a
flipped byte are truncation points (``LogSegment.recover``: ``batch.ensureValid()`` throws
``CorruptRecordException``, the segment is truncated at the batch and every later segment
deleted). Skips where ../shared/kafka is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import struct

import pytest

from tests.broker import recover_with_kafka
from tests.helpers import events, run_kseg

pytestmark = pytest.mark.slow

REAL_41 = "kafka-4.1.0-dev/data"


def _batches(log) -> list[dict]:
    proc = run_kseg("dump", log, "--batches-only", "-f", "json")
    return [e for e in events(proc.stdout) if e["type"] == "batch"]


def _flip_byte(pdir, seg_index: int, batch_index: int, offset_in_batch: int = 70) -> None:
    log = sorted(pdir.glob("*.log"))[seg_index]
    b = _batches(log)[batch_index]
    at = b["position"] + min(offset_in_batch, b["size"] - 1)  # inside this batch, CRC-covered
    with open(log, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x40]))


def _tear_tail(pdir, cut: int = 7) -> None:
    log = sorted(pdir.glob("*.log"))[-1]
    b = _batches(log)[-1]
    os.truncate(log, b["position"] + min(cut, b["size"] - 1))


def _zero_tail(pdir, n: int = 4096) -> None:
    """What a crash leaves after a preallocated or unflushed tail: zero bytes after the last batch."""
    log = sorted(pdir.glob("*.log"))[-1]
    with open(log, "ab") as f:
        f.write(b"\0" * n)


def _drop_index(pdir, seg_index: int) -> None:
    """Remove a segment's `.index` (a crash between creating the .log and its index, or an
    operator's rm): LogLoader.loadSegmentFiles then recovers that segment while loading."""
    sorted(pdir.glob("*.index"))[seg_index].unlink()


def _partial_txnindex(pdir, seg_index: int) -> None:
    """A `.txnindex` ending in a partial 34-byte entry (TransactionIndex.sanityCheck fails)."""
    log = sorted(pdir.glob("*.log"))[seg_index]
    log.with_suffix(".txnindex").write_bytes(bytes(35))


def _swap_prefix(pdir, seg_index: int, batches: int, cleaned: bool = False) -> None:
    """What an interrupted compaction leaves: `<base>.log.swap`, the segment's first ``batches``
    batches (as the cleaner's output), and with ``cleaned`` a `<base>.log.cleaned` too (an
    unfinished split, KAFKA-6264)."""
    log = sorted(pdir.glob("*.log"))[seg_index]
    cut = _batches(log)[batches]["position"]
    data = log.read_bytes()[:cut]
    log.with_name(log.name + ".swap").write_bytes(data)
    if cleaned:
        log.with_name(log.name + ".cleaned").write_bytes(data)


def _count_plus_one(pdir, seg_index: int, batch_index: int) -> None:
    """A CRC-valid batch whose records_count contradicts its offsets (kseg.fixtures.corrupt)."""
    from kseg.fixtures.corrupt import raise_records_count

    log = sorted(pdir.glob("*.log"))[seg_index]
    raise_records_count(log, _batches(log)[batch_index]["position"])


def _both(*damages):
    def damage(pdir):
        for d in damages:
            d(pdir)

    return damage


def _lie_base_offset(pdir, seg_index: int, batch_index: int, by: int) -> None:
    log = sorted(pdir.glob("*.log"))[seg_index]
    b = _batches(log)[batch_index]
    with open(log, "r+b") as f:
        f.seek(b["position"])
        (base,) = struct.unpack(">q", f.read(8))
        f.seek(b["position"])
        f.write(struct.pack(">q", base + by))


# name -> (source partition under shared/real, damage)
CASES = {
    "flip-none-0": (f"{REAL_41}/dev-none-0", lambda p: _flip_byte(p, 1, 3)),
    "flip-gzip-0": (f"{REAL_41}/dev-gzip-0", lambda p: _flip_byte(p, 0, 2)),
    "torn-none-0": (f"{REAL_41}/dev-none-0", _tear_tail),
    "zeros-zstd-0": (f"{REAL_41}/dev-zstd-0", _zero_tail),
    "torn-txn-0": (f"{REAL_41}/dev-txn-java-0", lambda p: _tear_tail(p, 30)),
    "flip-legacy-0": (
        "xpxwo100__bullShit/tmp/kafka-logs/TEST-TOPIC-0",
        lambda p: _flip_byte(p, 0, 5000, 20),
    ),
    "flip-early-0": ("SharaWeil__kafka-0.11.0/data/test0-0", lambda p: _flip_byte(p, 0, 1)),
    "clean-lz4-0": (f"{REAL_41}/dev-lz4-0", lambda p: None),
    # baseOffset lies outside the CRC: what Kafka does depends on whether recovery appends an
    # index entry whose offset does not increase (OffsetIndex.append / TimeIndex.maybeAppend throw
    # InvalidOffsetException; LogLoader.recoverLog empties the segment to its base offset and
    # deletes the later ones) or never looks (the batch is kept)
    "lie-up-none-0": (f"{REAL_41}/dev-none-0", lambda p: _lie_base_offset(p, 1, 3, 1000)),
    "lie-down-none-0": (f"{REAL_41}/dev-none-0", lambda p: _lie_base_offset(p, 2, 4, -20)),
    "lie-up-gzip-0": (f"{REAL_41}/dev-gzip-0", lambda p: _lie_base_offset(p, 0, 1, 1000)),
    "lie-last-lz4-0": (f"{REAL_41}/dev-lz4-0", lambda p: _lie_base_offset(p, 0, -1, 1000)),
    # a segment whose .index is missing (or .txnindex partial) is recovered while the log loads
    # (LogLoader.loadSegmentFiles -> recoverSegment): cut there, the later segments stay
    "noidx-flip-none-0": (
        f"{REAL_41}/dev-none-0",
        _both(lambda p: _drop_index(p, 1), lambda p: _flip_byte(p, 1, 3)),
    ),
    "txnpart-flip-none-0": (
        f"{REAL_41}/dev-none-0",
        _both(lambda p: _partial_txnindex(p, 2), lambda p: _flip_byte(p, 2, 2)),
    ),
    # leftover .swap files: LogLoader.load swaps a valid one in (deleting the segments whose
    # offsets it covers) and deletes one at or above the lowest .cleaned offset
    "swap-none-0": (f"{REAL_41}/dev-none-0", lambda p: _swap_prefix(p, 1, 3)),
    # RecordBatch.ensureValid checks sizes and the CRC only: a CRC-valid batch whose count
    # contradicts its offsets is kept with everything after it
    "count-none-0": (f"{REAL_41}/dev-none-0", lambda p: _count_plus_one(p, 1, 3)),
    "swapsplit-none-0": (f"{REAL_41}/dev-none-0", lambda p: _swap_prefix(p, 1, 3, cleaned=True)),
}

# After a clean shutdown, with recovery points at the log end (`when: every_start` only)
CLEAN = {
    "cs-noidx-flip-none-0": CASES["noidx-flip-none-0"],
    "cs-flip-none-0": CASES["flip-none-0"],
    "cs-lie-up-none-0": CASES["lie-up-none-0"],
    # a torn tail is no reason to stop: the reader ends quietly at an entry past the end
    "cs-torn-none-0": CASES["torn-none-0"],
}

# Damage that stops the broker at start-up: each needs a broker start of its own
FATAL = {
    # a baseOffset raised past 2^31-1 from the segment base: LogSegment.recover's
    # ensureOffsetInRange throws LogSegmentOffsetOverflowException, LogLoader.retryOnOffsetOverflow
    # asks LocalLog.splitOverflowedSegment, whose hasOverflow() looks only at the LAST batch:
    # "Split operation is only permitted for segments with overflow", Error starting LogManager
    "lie-overflow-none-0": (f"{REAL_41}/dev-none-0", lambda p: _lie_base_offset(p, 0, 4, 1 << 40)),
    # offsets that go backwards in a segment recovered while loading (no .index): the index's
    # InvalidOffsetException is not caught there (only recoverLog catches it)
    "noidx-lie-up-none-0": (
        f"{REAL_41}/dev-none-0",
        _both(lambda p: _drop_index(p, 1), lambda p: _lie_base_offset(p, 1, 3, 1000)),
    ),
}

# Damage that stops the broker when it starts after a CLEAN shutdown (nothing is recovered, but
# LogSegment.readNextOffset reads the last segment's last batches: FileLogInputStream.nextBatch
# throws on a size field below 14, "Found record size 0 smaller than minimum record overhead")
FATAL_CLEAN = {
    "cs-zeros-zstd-0": (f"{REAL_41}/dev-zstd-0", _zero_tail),
}


def _damaged_root(real_root, tmp_path_factory, cases) -> tuple:
    """The damaged copies in a log.dirs root of their own, and kseg's predictions for them."""
    root = tmp_path_factory.mktemp("damaged") / "data"
    root.mkdir()
    for name, (src, damage) in cases.items():
        dest = root / name
        shutil.copytree(real_root / src, dest)
        for f in dest.iterdir():
            f.chmod(0o644)
        damage(dest)
    return root


def _predictions(root) -> dict[str, list[dict]]:
    proc = run_kseg("verify", root, "-f", "json")
    assert proc.returncode & ~(4 | 8) == 0, proc.stderr
    return {
        os.path.basename(e["partition_dir"]): e["actions"]
        for e in events(proc.stdout)
        if e["type"] == "kafka_recovery"
    }


@pytest.fixture(scope="module")
def recovered(real_root, kafka_home, tmp_path_factory):
    """After an unclean shutdown (no checkpoints, no .kafka_cleanshutdown): kseg's predictions,
    and what the broker's recovery did."""
    root = _damaged_root(real_root, tmp_path_factory, CASES)
    predicted = _predictions(root)
    result = recover_with_kafka(
        kafka_home, tmp_path_factory.mktemp("recover"), {n: root / n for n in CASES}
    )
    return root, predicted, result


@pytest.fixture(scope="module")
def recovered_clean(real_root, kafka_home, tmp_path_factory):
    """After a clean shutdown, every recovery point at the log end: Kafka's recoverLog runs on
    nothing; only what it does while loading remains."""
    root = _damaged_root(real_root, tmp_path_factory, CLEAN)
    (root / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":1}')
    ends = {n: _log_end(root / n) for n in CLEAN}
    lines = [f"{n.rsplit('-', 1)[0]} 0 {o}" for n, o in ends.items()]
    (root / "recovery-point-offset-checkpoint").write_text(
        "\n".join(["0", str(len(lines)), *lines, ""])
    )
    predicted = _predictions(root)
    result = recover_with_kafka(
        kafka_home,
        tmp_path_factory.mktemp("recover-clean"),
        {n: root / n for n in CLEAN},
        clean_shutdown=True,
        recovery_points=ends,
    )
    return root, predicted, result


def _log_end(pdir) -> int:
    last = sorted(pdir.glob("*.log"))[-1]
    return _batches(last)[-1]["last_offset"] + 1


def _logs(pdir) -> dict[str, int]:
    return {f.name: f.stat().st_size for f in sorted(pdir.glob("*.log"))}


def _what_kafka_leaves(
    logs: dict[str, int], actions: list[dict], clean: bool = False
) -> dict[str, int]:
    """Apply a kafka_recovery prediction to the `.log` files (name -> size); after a ``clean``
    shutdown, what it does only after an unclean one does not happen."""
    out = dict(logs)
    names = sorted(out)
    for a in actions:
        if clean and a["when"] == "unclean_shutdown":
            continue
        if a["action"] == "complete_swap":
            for f in a["replaces"]:
                out.pop(os.path.basename(f), None)
            out[f"{a['offset']:020d}.log"] = os.path.getsize(a["file"])
            names = sorted(out)
        elif a["action"] == "truncate":
            out[os.path.basename(a["file"])] = a["position"]
        elif a["action"] == "delete_later_segments":
            for name in names[len(names) - a["count"] :]:
                out.pop(name, None)
        elif a["action"] == "empty_segment":  # truncated to its base offset
            out[os.path.basename(a["file"])] = 0
        elif a["action"] == "reset_log":
            out = {f"{a['offset']:020d}.log": 0}
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_kseg_predicts_what_kafka_recovery_leaves(recovered, name):
    _check(*recovered, name)


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_kseg_predicts_what_kafka_does_after_a_clean_shutdown(recovered_clean, name):
    _check(*recovered_clean, name)


def test_after_a_clean_shutdown_only_the_load_time_recovery_happens(recovered_clean):
    """A corrupt batch in a segment WITH its index is kept (Kafka skips recovery); the same
    damage in a segment without `.index` is cut while loading, on this very start."""
    _, predicted, _ = recovered_clean
    assert [a["when"] for a in predicted["cs-noidx-flip-none-0"]] == ["every_start"]
    assert [a["action"] for a in predicted["cs-flip-none-0"]] == ["keep_corrupt_batch"]


def _check(root, predicted, result, name):
    got = result[name]
    assert got.started
    assert got.dir is not None, f"the broker left no dir for {name}"
    kafka = {n: s for n, s in got.files.items() if n.endswith(".log")}
    clean = (root / ".kafka_cleanshutdown").exists()
    ours = _what_kafka_leaves(_logs(root / name), predicted.get(name, []), clean)
    assert ours == kafka, (
        f"kseg predicted {json.dumps(predicted.get(name))}\n"
        f"broker log:\n" + "\n".join(got.log_lines[-15:])
    )


def test_every_damaged_copy_has_a_prediction(recovered):
    """A damaged copy that Kafka changes is never silently clean in kseg (and the clean copy has
    no prediction: Kafka changes nothing)."""
    root, predicted, _ = recovered
    # (a raised baseOffset of the LAST batch is a gap Kafka accepts: no reader can tell)
    assert set(predicted) == set(CASES) - {"clean-lz4-0", "lie-last-lz4-0"}


def test_a_missing_index_keeps_the_later_segments(recovered):
    """LogLoader.loadSegmentFiles' truncation deletes nothing after it; recoverLog then finds
    the segment valid (it was cut already) and goes on: no delete_later_segments."""
    _, predicted, _ = recovered
    assert [(a["action"], a.get("reason")) for a in predicted["noidx-flip-none-0"]] == [
        ("truncate", "missing_index")
    ]
    assert [(a["action"], a.get("reason")) for a in predicted["txnpart-flip-none-0"]] == [
        ("truncate", "partial_txnindex")
    ]


@pytest.mark.parametrize("name", sorted(FATAL) + sorted(FATAL_CLEAN))
def test_kseg_predicts_that_kafka_fails_to_start(real_root, kafka_home, tmp_path, name):
    clean = name in FATAL_CLEAN
    src, damage = (FATAL_CLEAN if clean else FATAL)[name]
    root = tmp_path / "data"
    shutil.copytree(real_root / src, root / name)
    for f in (root / name).iterdir():
        f.chmod(0o644)
    damage(root / name)
    if clean:
        (root / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":1}')
    proc = run_kseg("verify", root, "-f", "json")
    assert proc.returncode & 4, proc.stderr
    (rec,) = [e for e in events(proc.stdout) if e["type"] == "kafka_recovery"]
    result = recover_with_kafka(
        kafka_home, tmp_path / "recover", {name: root / name}, clean_shutdown=clean
    )[name]
    assert not result.started
    assert [a["action"] for a in rec["actions"]][-1] == "fail_to_start", rec


def test_a_malformed_root_checkpoint_is_an_error_because_the_broker_stops(
    real_root, kafka_home, tmp_path
):
    """CheckpointFile's reader fails on a malformed line; LogDirFailureChannel takes the log dir
    offline and a broker with no other log dir shuts down: exit 4, not a warning."""
    from tests.broker import Broker

    garbage = "0\n2\ngarbage\n"
    root = tmp_path / "copy"
    shutil.copytree(real_root / "seanorth__kafka-server/kafka-logs", root)
    (root / "recovery-point-offset-checkpoint").chmod(0o644)
    (root / "recovery-point-offset-checkpoint").write_text(garbage)
    proc = run_kseg("verify", root, "-f", "json")
    (f,) = [e for e in events(proc.stdout) if e["type"] == "finding" and e["severity"] == "error"]
    assert proc.returncode == 4 and f["file"].endswith("recovery-point-offset-checkpoint")
    assert "log dir offline" in f["message"]
    broker = Broker(kafka_home, tmp_path / "broker")
    (broker.data / "recovery-point-offset-checkpoint").write_text(garbage)
    with pytest.raises(RuntimeError, match="exited"):
        broker.start()
    assert "Shutdown broker because all log dirs" in broker.server_log()
