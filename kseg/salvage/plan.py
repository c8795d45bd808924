"""A salvage as a repair manifest (kseg.repair.manifest.Plan), so that kseg.repair applies it
(quarantine and fsync first, atomic steps, the log dir's lock held), resumes it after a kill and
``kseg restore`` undoes it: a damaged segment is a ``rewrite`` (its original quarantined whole,
the new file spliced from that copy without the lost byte ranges, under the same name), a
segment whose only faults lie outside the CRC gets ``patch`` actions, indexes of every changed
segment are rebuilt, and a log that now ends earlier loses its snapshots and leader epochs past
the new end (kseg.repair.plan.plan_new_log_end, as a repair's truncation). A leftover source
that gives entries back (kseg.salvage.leftovers) is a ``put_back``: a new segment named by its
first kept offset, spliced from the source (only read), its indexes created. A salvaged log
that would end below its log start offset is reset as Kafka's LogLoader does (every segment
quarantined, one empty segment at the log start offset: kseg.repair.plan.plan_reset_to)."""

from __future__ import annotations

from pathlib import Path

from kseg.format.kafka_version import DEFAULT as DEFAULT_KAFKA_VERSION
from kseg.format.kafka_version import KafkaVersion
from kseg.repair.actions import CREATE, PATCH, PUT_BACK, REPLACE, REWRITE
from kseg.repair.manifest import Action, Plan
from kseg.repair.plan import index_problem, plan_new_log_end, plan_reset_to, whole_file
from kseg.salvage.cost import leftovers, live, log_end
from kseg.salvage.walk import SegmentSalvage
from kseg.storage.atomic import sha256_file
from kseg.storage.splice import splice_digest
from kseg.verify.partition import PartitionReport

REBUILT = "index rebuilt from the salvaged log"


def _why(s: SegmentSalvage) -> str:
    lost = [x for x in s.lost if x.end > x.start]
    parts = [
        f"{len(lost)} unreadable range(s) left out ({sum(x.end - x.start for x in lost)} bytes)"
    ]
    if s.edits:
        parts.append(f"{len(s.edits)} edit(s) outside the CRC")
    if s.below_start:
        parts.append(f"{s.below_start} bytes below the log start offset left out")
    return "salvaged: " + ", ".join(parts)


def plan_salvage(
    report: PartitionReport,
    segs: list[SegmentSalvage],
    *,
    index_interval_bytes: int = 4096,
    kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION,
) -> Plan:
    """What salvaging ``report``'s partition in place changes (nothing when nothing is lost or
    edited and every index is right)."""
    pdir = report.target.partition_dir.resolve()
    plan = Plan(
        pdir,
        index_interval_bytes=index_interval_bytes,
        kafka_version=None if kafka_version == DEFAULT_KAFKA_VERSION else str(kafka_version),
    )
    rebuild: list[Path] = []
    changed = False
    for scan, s in zip(report.scans, live(segs), strict=True):
        log = pdir / s.source.name
        edits = [[e.position, e.old.hex(), e.new.hex()] for e in s.edits]
        if s.rewritten:
            keep = [list(r) for r in s.keep]
            after = splice_digest(log, s.keep, [(e.position, e.new) for e in s.edits])
            a = whole_file(REWRITE, log, _why(s))
            a.keep, a.edits = keep, edits
            a.after_length, a.after_sha256 = after
            plan.actions.append(a)
        elif s.edits:
            for e in s.edits:
                plan.actions.append(
                    Action(
                        PATCH,
                        str(log),
                        e.reason,
                        position=e.position,
                        length=len(e.old),
                        old_hex=e.old.hex(),
                        new_hex=e.new.hex(),
                    )  # fmt: skip
                )
        if s.changed or index_problem(scan):
            rebuild.append(log)
        changed = changed or s.changed
    for s in leftovers(segs):
        log = pdir / s.put_back_name
        edits = [[e.position, e.old.hex(), e.new.hex()] for e in s.edits]
        length, sha = sha256_file(s.source.path)
        after = splice_digest(s.source.path, s.keep, [(e.position, e.new) for e in s.edits])
        why = (
            f"salvaged: offsets {s.first_offset}-{s.last_offset} ({s.records} records) put back "
            f"from {s.source.path} ({s.source.origin})"
        )
        a = Action(PUT_BACK, str(log), why, length=length, sha256=sha, source=str(s.source.path))
        a.keep, a.edits = [list(r) for r in s.keep], edits
        a.after_length, a.after_sha256 = after
        plan.actions.append(a)
        rebuild.append(log)
        changed = True
    end = log_end(segs)
    start = report.log_start_offset
    if changed and end is not None and start is not None and end < start:
        # as Kafka's LogLoader when recovery leaves the log below its log start offset
        # (FORMATS.md s6): every segment goes, one empty segment at the log start offset
        reset = Plan(
            pdir, index_interval_bytes=plan.index_interval_bytes, kafka_version=plan.kafka_version
        )
        return plan_reset_to(reset, start, end)
    if changed and end is not None:
        plan_new_log_end(plan, end)
    plan.rebuild_logs = [str(p) for p in rebuild]
    for log in rebuild:
        for suffix in (".index", ".timeindex", ".txnindex"):
            p = log.with_suffix(suffix)
            if p.exists():
                plan.actions.append(whole_file(REPLACE, p, REBUILT))
            elif suffix != ".txnindex":
                plan.actions.append(Action(CREATE, str(p), REBUILT))
    return plan
