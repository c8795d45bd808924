"""What a repair of one partition would change, from verify's report, changing nothing:
truncations (every removed byte named by position, length and sha256), moves into the
quarantine (the segments after the truncation point, snapshots past the new end), in-place
patches, index rebuilds, the leader-epoch checkpoint's rewrite, or Kafka's reset to one empty
segment. `verify --repair --dry-run` shows a plan; kseg.repair.apply carries it out."""

from __future__ import annotations

from pathlib import Path

from kseg.format import checkpoint as cp
from kseg.format.errors import CorruptionError
from kseg.format.kafka_version import DEFAULT as DEFAULT_KAFKA_VERSION
from kseg.format.kafka_version import KafkaVersion
from kseg.format.txn_index import encode_entries as encode_txn
from kseg.index.rebuild import rebuilt_indexes
from kseg.repair.actions import CREATE, INDEX_SUFFIXES, MOVE, PATCH, REPLACE, TRUNCATE
from kseg.repair.manifest import Action, Plan
from kseg.storage import files as F
from kseg.storage.atomic import sha256_file, sha256_range
from kseg.storage.mapped import holds
from kseg.storage.side_files import read_side_file
from kseg.verify.findings import INFO, MISSING_INDEX
from kseg.verify.findings import Patch as PatchNeeded
from kseg.verify.partition import PartitionReport
from kseg.verify.segment import aborted_under


def plan_repair(
    report: PartitionReport,
    *,
    keep_later_segments: bool = False,
    index_interval_bytes: int = 4096,
    kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION,
) -> Plan:
    """What a repair of ``report``'s partition would do. Paths are absolute and resolved: a
    manifest must mean the same files whatever directory a later command runs in."""
    pdir = report.target.partition_dir.resolve()
    plan = Plan(
        pdir,
        index_interval_bytes=index_interval_bytes,
        kafka_version=None if kafka_version == DEFAULT_KAFKA_VERSION else str(kafka_version),
    )
    first = report.first_corrupt
    if first is not None and report.scans[first].log in report.recovered_at_load:
        # LogLoader.loadSegmentFiles -> recoverSegment cuts this segment while loading, on every
        # start, and deletes no later segment: they stay (an offset gap is legal), each later
        # corrupt one handled on its own, as with --keep-later-segments
        keep_later_segments = True
    if report.reset_to(keep_later_segments=keep_later_segments) is not None:
        return _plan_reset(report, plan, keep_later_segments)
    rebuild: list[Path] = []
    later_why = _later_segment_reason(report) if first is not None else {}
    for i, scan in enumerate(report.scans):
        log = pdir / scan.log.name
        moved = first is not None and i > first and not keep_later_segments
        if not moved:
            plan.actions.extend(_patch_action(pdir, p) for p in scan.patches)
        if scan.corrupt and (first == i or keep_later_segments):
            if scan.valid_bytes < scan.size:
                reason = f"{scan.first_error.kind} at byte {scan.valid_bytes}: {scan.first_error.message}"
                plan.actions.append(
                    Action(
                        TRUNCATE,
                        str(log),
                        reason,
                        position=scan.valid_bytes,
                        length=scan.size - scan.valid_bytes,
                        sha256=sha256_range(log, scan.valid_bytes, scan.size),
                        quarantine_file=f"{log.name}.tail-at-{scan.valid_bytes}",
                    )
                )
            rebuild.append(log)
        elif moved:
            for p in [log] + [log.with_suffix(s) for s in INDEX_SUFFIXES]:
                if p.exists():
                    why = (
                        f"segment after the truncation point (offset {scan.base_offset}); "
                        + later_why.get(i, later_why[None])
                    )
                    plan.actions.append(whole_file(MOVE, p, why))
        elif index_problem(scan):
            rebuild.append(log)
    end = report.log_end_offset
    if first is not None and end is not None and not keep_later_segments:
        plan_new_log_end(plan, end)
    plan.rebuild_logs = [str(p) for p in rebuild]
    by_log = {pdir / s.log.name: s for s in report.scans}
    if report.txns_replayed:  # the scans hold what a rebuild would write: carry it
        plan.rebuilt = {str(p): rebuilt_indexes(by_log[p], kafka_version) for p in rebuild}
    for log in rebuild:
        for p in _indexes_to_write(log, by_log[log], plan.rebuilt.get(str(log))):
            if p.exists():
                plan.actions.append(whole_file(REPLACE, p, "index rebuilt from the log"))
            else:
                plan.actions.append(Action(CREATE, str(p), "index rebuilt from the log"))
    return plan


def plan_new_log_end(plan: Plan, end: int) -> None:
    """What a log cut to end at ``end`` needs beside it, as Kafka does after a truncation: the
    producer snapshots past the new end moved away, the leader epochs starting at or past it
    dropped from leader-epoch-checkpoint (kseg salvage uses it too)."""
    pdir = plan.partition_dir
    for p in sorted(pdir.iterdir()):
        k = F.file_kind(p)
        if k.kind == F.SNAPSHOT and not k.temp_suffix and k.base_offset > end:
            why = f"producer snapshot past the new log end {end}"
            plan.actions.append(whole_file(MOVE, p, why))
    epochs = pdir / "leader-epoch-checkpoint"
    if epochs.exists():
        try:
            entries = cp.read_leader_epoch_checkpoint(
                read_side_file(epochs, F.LEADER_EPOCH_CHECKPOINT)
            )
        except (OSError, CorruptionError):  # an unreadable checkpoint is left for Kafka
            entries = []
        if any(e.start_offset >= end for e in entries):
            plan.epoch_truncate_to = end
            why = f"leader epochs starting at or past the new log end {end}"
            plan.actions.append(whole_file(REPLACE, epochs, why))


def _later_segment_reason(report: PartitionReport) -> dict[int | None, str]:
    """What Kafka does to each segment the repair moves because it follows kseg's truncation
    point (by index in scans; None: any other), as kafka_recovery predicts it: LogLoader.recoverLog
    deletes the segments after the one it truncates (or empties); one it does not reach (below
    the recovery point), or whose bad batch it keeps (offsets it accepts, a CRC-valid invalid
    batch), it keeps, with everything after it."""
    from kseg.verify.kafka_outcome import UNCLEAN, kafka_recovery

    scans = report.scans
    first = report.first_corrupt
    outcome = kafka_recovery(report)
    actions = outcome["actions"] if outcome is not None else []
    files = {str(s.log): i for i, s in enumerate(scans)}
    keep = "kseg quarantines it so the log ends at its last valid batch; --keep-later-segments keeps it"
    out: dict[int | None, str] = {}
    cut = None
    for a in actions:
        if a["action"] in ("truncate", "empty_segment") and a["when"] == UNCLEAN:
            cut = files.get(a["file"])
    if cut is not None:
        for i in range(cut + 1, len(scans)):
            out[i] = "Kafka's recovery deletes it"
        if cut > first:
            out[cut] = "Kafka's recovery truncates it and deletes the segments after it; " + keep
    mine = [a for a in actions if a.get("file") == str(scans[first].log)]
    kinds = {a["action"]: a for a in mine}
    if any(a["action"] == "fail_to_start" for a in actions):
        why = "Kafka would not start on this log (see kafka_recovery)"
    elif "keep_corrupt_batch" in kinds:
        rp = kinds["keep_corrupt_batch"].get("recovery_point")
        why = (
            "Kafka would keep it (its recovery does not reach the corrupt batch, below the"
            f" recovery point {rp})"
        )
    elif "keep_invalid_batch" in kinds:
        why = (
            "Kafka would keep it (its recovery keeps the CRC-valid batch whose records_count or"
            " last_offset_delta contradicts its offsets)"
        )
    elif "keep_bad_offsets" in kinds:
        why = "Kafka would keep it (its recovery keeps the batch whose offsets go backwards)"
    else:
        why = "Kafka would keep it"
    out[None] = f"{why}, {keep}"
    return out


def _indexes_to_write(log: Path, scan, rebuilt) -> list[Path]:
    """The index files of a rebuilt log that the rebuild changes; only those are quarantined
    and written. A truncated log gets all of them; otherwise an index verify found wrong or
    missing, and a .txnindex whose rebuilt bytes differ (unknown: written). An identical or
    equivalent index is no problem verify reported, and nothing is lost by leaving it."""
    truncated = scan.corrupt and scan.valid_bytes < scan.size
    out = []
    for suffix, status in ((".index", scan.offset_index), (".timeindex", scan.time_index)):
        if truncated or status is None or status.status in ("wrong", "missing"):
            out.append(log.with_suffix(suffix))
    txn = log.with_suffix(".txnindex")
    if rebuilt is None or truncated:
        if txn.exists():
            out.append(txn)
    elif (rebuilt.aborted or txn.exists()) and (
        not txn.exists() or not any(holds(txn, b) for b in _txn_rules_bytes(scan, rebuilt))
    ):
        out.append(txn)
    return out


def _txn_rules_bytes(scan, rebuilt) -> set[bytes]:
    """The `.txnindex` bytes any Kafka release's rule writes for the scanned log (the chosen
    one's, and 0.11-2.7's and 2.8+'s): a file one of them wrote is kept, not rewritten."""
    return {encode_txn(rebuilt.aborted)} | {
        encode_txn(aborted_under(scan, empty)) for empty in (False, True)
    }


def index_problem(scan) -> bool:
    """An index verify reports as a problem: wrong, or missing beside an inactive segment. A
    missing index of the active segment is an info finding (Kafka creates it at startup), so
    the repair leaves it alone: a repair changes only what verify calls a problem."""
    if any(st is not None and st.status == "wrong" for st in (scan.offset_index, scan.time_index)):
        return True
    return any(f.kind == MISSING_INDEX and f.severity != INFO for f in scan.findings)


def _patch_action(pdir: Path, p: PatchNeeded) -> Action:
    return Action(
        PATCH,
        str(pdir / Path(p.file).name),
        p.reason,
        position=p.position,
        length=len(p.old),
        old_hex=p.old.hex(),
        new_hex=p.new.hex(),
    )


def _plan_reset(report: PartitionReport, plan: Plan, keep_later: bool) -> Plan:
    """Kafka's LogLoader (deleteSegmentsIfLogStartGreaterThanLogEnd), when the log after
    recovery ends below log-start-offset-checkpoint: every segment deleted
    (removeAndDeleteSegmentsAsync), the leader-epoch cache cleared (clearAndFlush), producer
    state truncated (truncateFullyAndStartAt deletes every snapshot), and one empty segment
    created at the log start offset. kseg moves every removed file into the quarantine."""
    start = report.reset_to(keep_later_segments=keep_later)
    end = report.end_after_repair(keep_later_segments=keep_later)
    return plan_reset_to(plan, start, end)


def plan_reset_to(plan: Plan, start: int, end: int) -> Plan:
    """The reset of a log that would end at ``end``, below its log start offset ``start`` (see
    _plan_reset; kseg salvage uses it too)."""
    pdir = plan.partition_dir
    why = (
        f"the log would end at {end}, below"
        f" its log start offset {start} (log-start-offset-checkpoint): Kafka deletes every segment"
    )
    for p in sorted(pdir.iterdir()):
        k = F.file_kind(p)
        if not p.is_file() or k.temp_suffix:
            continue
        if k.kind in (F.LOG, F.INDEX, F.TIME_INDEX, F.TXN_INDEX, F.SNAPSHOT):
            plan.actions.append(whole_file(MOVE, p, why))
    epochs = pdir / "leader-epoch-checkpoint"
    if epochs.is_file():
        plan.actions.append(whole_file(REPLACE, epochs, "leader epochs cleared, as Kafka does"))
    for suffix in (".log", ".index", ".timeindex"):
        plan.actions.append(
            Action(
                CREATE,
                str(pdir / F.segment_file_name(start, suffix)),
                f"one empty segment at the log start offset {start}, as Kafka creates it",
            )
        )
    plan.reset_to = start
    return plan


def whole_file(action: str, path: Path, reason: str) -> Action:
    """An action on a whole file (moved, or replaced after a copy): its size and sha256 now."""
    size, sha = sha256_file(path)
    return Action(action, str(path), reason, length=size, sha256=sha, quarantine_file=path.name)
