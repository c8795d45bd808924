"""What Kafka's own recovery would do to a partition on the broker's next start.

verify knows every fact Kafka's LogLoader acts on; this turns a PartitionReport into one event per
affected partition (``{"type": "kafka_recovery"}``), so an operator can decide before starting the
broker. Kafka's rules (storage/internals/log/LogLoader.java, LogSegment.java):

- After an unclean shutdown (no ``.kafka_cleanshutdown``), LogSegment.recover runs on every
  segment from the one holding the recovery point (recovery-point-offset-checkpoint) on; at the
  first invalid batch it truncates the segment there and deletes every later segment. A segment
  wholly below the recovery point is not recovered: its bad bytes stay.
- A v2 batch with a flipped magic >= 3 passes recovery and is kept, silently; so is a wrong
  partitionLeaderEpoch (recovery loads one above its latest epoch into the leader-epoch cache).
- An unreadable end-transaction marker: the broker does not start.
- On every start: when the log then ends below log-start-offset-checkpoint, every segment is
  deleted and one empty segment is created at the log start offset.
"""

from __future__ import annotations

from kseg.verify import findings as K
from kseg.verify.partition import PartitionReport
from kseg.verify.swaps import EVERY_START

UNCLEAN = "unclean_shutdown"  # Kafka does it on a start after an unclean shutdown


def kafka_recovery(report: PartitionReport) -> dict | None:
    """The event for ``report``'s partition, or None when Kafka would change nothing."""
    scans = report.scans
    rp = report.recovery_point
    first_recovered = report.first_recovered()
    actions: list[dict] = list(report.kafka_swaps)  # LogLoader.load: before anything is loaded
    for i, s in enumerate(scans):
        # LogLoader.loadSegmentFiles recovers a segment without `.index` (or with a partial
        # `.txnindex`) while loading, on every start: an exception there is not caught (the broker
        # stops), and a truncation there deletes no later segment; recoverLog then finds nothing
        # left to cut in it
        at_load = s.log in report.recovered_at_load
        if s.kafka_refused is not None and at_load:
            act = _act("fail_to_start", s, s.kafka_refused.position, EVERY_START)
            act["cause"] = "invalid_offset"
            actions.append(act)
            break
        if s.kafka_refused is not None and i >= first_recovered:
            actions.append(_empty(s))
            later = len(scans) - i - 1
            if later and report.whole:
                actions.append({"action": "delete_later_segments", "count": later, "when": UNCLEAN})
            break
        for pos in s.kafka_kept_bad:
            if s.kafka_stop is None or pos < s.kafka_stop:
                actions.append(_act("keep_bad_magic_batch", s, pos, EVERY_START))
        for pos in s.kafka_kept_epoch:
            if s.kafka_stop is None or pos < s.kafka_stop:
                actions.append(_act("keep_bad_leader_epoch", s, pos, EVERY_START))
        overflow = s.kafka_fatal is not None and s.kafka_fatal.kind == K.OFFSET_OUT_OF_RANGE
        if (
            s.kafka_fatal is not None
            and (s.kafka_stop is None or s.kafka_fatal.position < s.kafka_stop)
            and not (overflow and i < first_recovered and not at_load)  # not recovered
        ):
            act = _act(
                "fail_to_start", s, s.kafka_fatal.position, EVERY_START if at_load else UNCLEAN
            )
            act["cause"] = "offset_overflow" if overflow else "control_record"
            actions.append(act)
            break
        kinds = {f.position: f.kind for f in s.findings} if s.kafka_kept_offsets else {}
        for pos in s.kafka_kept_offsets:
            invalid = kinds.get(pos) == K.INVALID_BATCH
            actions.append(
                _act("keep_invalid_batch" if invalid else "keep_bad_offsets", s, pos, EVERY_START)
            )
        if s.kafka_stop is not None:
            if at_load:
                act = _act("truncate", s, s.kafka_stop, EVERY_START)
                act["reason"] = report.recovered_at_load[s.log]
                actions.append(act)
                continue
            if i < first_recovered:
                actions.append(_act("keep_corrupt_batch", s, s.kafka_stop, EVERY_START, rp=rp))
                continue
            actions.append(_act("truncate", s, s.kafka_stop, UNCLEAN))
            later = len(scans) - i - 1
            if later and report.whole:
                actions.append({"action": "delete_later_segments", "count": later, "when": UNCLEAN})
            break
    if report.kafka_tail_fatal is not None:  # after a clean shutdown: see PartitionReport
        act = _act("fail_to_start", scans[-1], report.kafka_tail_fatal, EVERY_START)
        act["cause"] = "record_size"
        actions.append(act)
    start = report.log_start_offset
    if report.whole and start is not None and scans and report.kafka_tail_fatal is None:
        untouched_end, kafka_end = _end(scans[-1]), report.kafka_log_end
        if untouched_end < start:
            actions.append({"action": "reset_log", "offset": start, "when": EVERY_START})
        elif kafka_end is not None and kafka_end < start:
            actions.append({"action": "reset_log", "offset": start, "when": UNCLEAN})
    if not actions:
        return None
    return {
        "type": "kafka_recovery",
        "partition_dir": str(report.target.partition_dir),
        "clean_shutdown": report.clean_shutdown,
        "recovery_point": rp,
        "actions": actions,
        "summary": summary_line(actions, report.clean_shutdown),
    }


def _end(scan) -> int:
    return scan.base_offset if scan.last_offset is None else scan.last_offset + 1


def _empty(scan) -> dict:
    """LogLoader.recoverLog: an InvalidOffsetException out of LogSegment.recover (an index
    append refused an entry) -> segment.truncateTo(baseOffset), then the later unflushed
    segments are deleted."""
    r = scan.kafka_refused
    return {
        "action": "empty_segment",
        "file": str(scan.log),
        "offset": scan.base_offset,
        "position": r.position,
        "index": r.index,
        "refused_offset": r.offset,
        "last_index_offset": r.last_offset,
        "when": UNCLEAN,
    }


def _act(action: str, scan, position: int, when: str, rp: int | None = None) -> dict:
    out = {"action": action, "file": str(scan.log), "position": position, "when": when}
    if rp is not None:
        out["recovery_point"] = rp
    return out


# fail_to_start's cause -> (what stops the broker, why: the Kafka code that throws)
_FAIL_TO_START = {
    "control_record": ("unreadable control record", ""),
    "offset_overflow": (
        "batch",
        ", whose last offset does not fit the segment's 32-bit relative offsets"
        " (LogSegmentOffsetOverflowException; the segment split refuses it: Error starting"
        " LogManager)",
    ),
    "invalid_offset": (
        "batch",
        ", whose offsets go backwards: its segment is recovered while the log loads (its .index"
        " is missing or its .txnindex partial), where the index's InvalidOffsetException is not"
        " caught (Error starting LogManager)",
    ),
    "record_size": (
        "entry",
        ", whose size field is below 14: after a clean shutdown Kafka does not recover the"
        " segment but reads its last batches (LogSegment.readNextOffset), and FileLogInputStream"
        " throws CorruptRecordException (Error starting LogManager, on every start until the log"
        " is cut there)",
    ),
}


def summary_line(actions: list[dict], clean_shutdown: bool = False) -> str:
    parts = []
    for a in actions:
        kind = a["action"]
        if kind == "truncate":
            text = f"truncate {a['file']} at byte {a['position']}"
            if "reason" in a:
                what = (
                    "its .index is missing"
                    if a["reason"] == "missing_index"
                    else "its .txnindex ends in a partial entry"
                )
                text += f" ({what}: Kafka recovers it while loading the log, keeping the later segments)"
        elif kind == "complete_swap":
            text = f"complete the interrupted swap of {a['file']}: it becomes the segment at {a['offset']}"
            if a["replaces"]:
                text += f", replacing {', '.join(a['replaces'])}"
        elif kind == "delete_swap":
            text = f"delete {a['file']} (part of an unfinished segment split)"
        elif kind == "delete_later_segments":
            text = f"delete {a['count']} later segment{'s' if a['count'] != 1 else ''}"
        elif kind == "empty_segment":
            text = (
                f"reset {a['file']} to an empty segment at its base offset {a['offset']}"
                f" (its {a['index']} index refuses the entry for offset {a['refused_offset']}"
                f" at byte {a['position']}, not above its last entry's {a['last_index_offset']}:"
                " InvalidOffsetException)"
            )
        elif kind == "keep_bad_offsets":
            text = (
                f"keep the batch at {a['file']} byte {a['position']} whose offsets go backwards"
                " (no index entry of its recovery refuses them; a consumer receives its records"
                " where the batch lies, then offsets that go backwards)"
            )
        elif kind == "keep_invalid_batch":
            text = (
                f"keep the batch at {a['file']} byte {a['position']} whose records_count or"
                " last_offset_delta contradicts its offsets (its CRC matches: recovery checks"
                " only sizes and the CRC; consumers fail on it)"
            )
        elif kind == "keep_bad_magic_batch":
            text = f"keep the bad-magic batch at {a['file']} byte {a['position']} silently (consumers fail on it)"
        elif kind == "keep_bad_leader_epoch":
            text = f"keep the wrong leader epoch of the batch at {a['file']} byte {a['position']} (and load it into its leader-epoch cache if it is above the latest)"
        elif kind == "keep_corrupt_batch":
            text = (
                f"keep the corrupt batch at {a['file']} byte {a['position']} (below the recovery"
                f" point {a['recovery_point']}: not recovered; readers fail on it)"
            )
        elif kind == "fail_to_start":
            what, why = _FAIL_TO_START[a.get("cause", "control_record")]
            text = f"fail to start on the {what} at {a['file']} byte {a['position']}{why}"
        else:  # reset_log
            text = f"reset the log to an empty segment at {a['offset']} (deleting every segment)"
        if a["when"] == UNCLEAN:
            text += " [after an unclean shutdown]"
        parts.append(text)
    line = "; ".join(parts)
    if clean_shutdown and any(a["when"] == UNCLEAN for a in actions):
        line += " (.kafka_cleanshutdown is present: Kafka skips recovery on the next start, so the [after an unclean shutdown] steps happen only after a later crash)"
    return line
