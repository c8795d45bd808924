"""A salvage as a repair manifest (kseg.repair.manifest.Plan), so that kseg.repair applies it
(quarantine and fsync first, atomic steps, the log dir's lock held), resumes it after a kill and
``kseg restore`` undoes it: a damaged segment is a ``rewrite`` (its original quarantined whole,
the new file spliced from that copy without the lost byte ranges, under the same name), a
segment whose only faults lie outside the CRC gets ``patch`` actions, indexes of every changed
segment are rebuilt, and a log that now ends earlier loses its snapshots and leader epochs past
the new end (kseg.repair.plan.plan_new_log_end, as a repair's truncation)."""

from __future__ import annotations

from pathlib import Path

from kseg.format.kafka_version import DEFAULT as DEFAULT_KAFKA_VERSION
from kseg.format.kafka_version import KafkaVersion
from kseg.repair.actions import CREATE, PATCH, REPLACE, REWRITE
from kseg.repair.manifest import Action, Plan
from kseg.repair.plan import index_problem, plan_new_log_end, whole_file
from kseg.salvage.cost import log_end
from kseg.salvage.walk import SegmentSalvage
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
    for scan, s in zip(report.scans, segs, strict=True):
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
    end = log_end(segs)
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
