"""The verify command as a library call: events out, an fsck-style exit bitmask accumulated."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..exitcodes import Exit
from ..format.errors import KsegError
from ..storage.lock import broker_lock_held
from ..storage.tree import ROOT, Target, path_kind, targets
from . import findings as K
from .partition import PartitionReport, verify_root_checkpoints, verify_target
from .repair import apply_plan, default_quarantine_root, incomplete_repairs, plan_repair, resume

_COUNTED = (K.ERROR, K.WARNING)


@dataclass(frozen=True, slots=True)
class VerifyOptions:
    deep: bool = False
    repair: bool = False
    dry_run: bool = False
    keep_later_segments: bool = False
    quarantine: Path | None = None
    force: bool = False
    index_interval_bytes: int = 4096
    topic: str | None = None
    partition: int | None = None


class VerifyRun:
    def __init__(self, opts: VerifyOptions) -> None:
        self.opts = opts
        self.code = Exit.OK
        self.counts = {K.ERROR: 0, K.WARNING: 0, K.INFO: 0}
        self.partitions = self.segments = self.repaired = 0
        self._locks: dict[Path, bool] = {}

    def _finding(self, f: K.Finding, **extra) -> dict:
        self.counts[f.severity] += 1
        return {**f.to_event(), **extra}

    def _lock_ok(self, log_dir: Path) -> bool:
        if self.opts.force:
            return True
        if log_dir not in self._locks:
            self._locks[log_dir] = not broker_lock_held(log_dir)
        return self._locks[log_dir]

    def _quarantine_root(self, t: Target) -> Path:
        return self.opts.quarantine or default_quarantine_root(t.log_dir)

    def events(self, paths: list[Path]) -> Iterator[dict]:
        roots = [p for p in paths if path_kind(p) == ROOT]
        reports: dict[Path, list[PartitionReport]] = {r: [] for r in roots}
        for t in targets(paths, self.opts.topic, self.opts.partition):
            report = yield from self._target(t)
            if report is not None and t.log_dir in reports:
                reports[t.log_dir].append(report)
        for root, reps in reports.items():
            for f in verify_root_checkpoints(root, reps):
                if f.severity in _COUNTED:
                    self.code |= Exit.PROBLEMS
                yield self._finding(f)
        yield {
            "type": "summary",
            "partitions": self.partitions,
            "segments": self.segments,
            "errors": self.counts[K.ERROR],
            "warnings": self.counts[K.WARNING],
            "infos": self.counts[K.INFO],
            "repaired": self.repaired,
            "exit_code": int(self.code),
        }

    def _target(self, t: Target):
        opts = self.opts
        self.partitions += 1
        writing = opts.repair and not opts.dry_run
        if writing and not self._lock_ok(t.log_dir):
            self.code |= Exit.OPERATIONAL
            yield self._finding(
                K.Finding(
                    K.ERROR,
                    "broker_running",
                    str(t.log_dir / ".lock"),
                    None,
                    None,
                    "a broker holds this log dir's lock: not repairing (--force overrides)",
                )
            )
            writing = False
        qroot = self._quarantine_root(t)
        if writing:
            for qdir in incomplete_repairs(qroot, t.partition_dir):
                try:
                    resume(qdir)
                    self.code |= Exit.REPAIRED
                    self.repaired += 1
                    yield {
                        "type": "repair_resumed",
                        "partition": str(t.partition_dir),
                        "quarantine": str(qdir),
                    }
                except (KsegError, OSError) as exc:
                    self.code |= Exit.OPERATIONAL
                    yield {
                        "type": "repair_failed",
                        "partition": str(t.partition_dir),
                        "quarantine": str(qdir),
                        "message": str(exc),
                    }
                    return None
            t = _refresh(t)  # a resumed repair may have moved segments away
        report = verify_target(t, deep=opts.deep, index_interval_bytes=opts.index_interval_bytes)
        for f in report.all_findings:
            yield self._finding(f)
        problems = any(f.severity in _COUNTED for f in report.all_findings)
        plan = (
            plan_repair(
                report,
                keep_later_segments=opts.keep_later_segments,
                index_interval_bytes=opts.index_interval_bytes,
            )
            if opts.repair
            else None
        )
        after = report
        if plan is not None and not plan.empty:
            for a in plan.actions:
                yield a.to_event(opts.dry_run or not writing)
            if writing:
                try:
                    qdir = apply_plan(plan, qroot, t.log_dir)
                except (KsegError, OSError) as exc:
                    self.code |= Exit.OPERATIONAL
                    yield {
                        "type": "repair_failed",
                        "partition": str(t.partition_dir),
                        "quarantine": None,
                        "message": str(exc),
                    }
                    return report
                self.repaired += 1
                yield {
                    "type": "repair_done",
                    "partition": str(t.partition_dir),
                    "quarantine": str(qdir),
                    "actions": len(plan.actions),
                }
                after = verify_target(
                    _refresh(t),
                    deep=opts.deep,
                    index_interval_bytes=opts.index_interval_bytes,
                )
        remaining = [f for f in after.all_findings if f.severity in _COUNTED]
        if after is not report:
            for f in remaining:
                yield {**f.to_event(), "remaining": True}
            self.code |= Exit.PROBLEMS if remaining else Exit.REPAIRED
        elif problems:
            self.code |= Exit.PROBLEMS
        yield from self._segment_events(report, after)
        return after

    def _segment_events(self, before: PartitionReport, after: PartitionReport) -> Iterator[dict]:
        post = {s.log: s for s in after.scans}
        for s in before.scans:
            self.segments += 1
            now = post.get(s.log)
            if now is None:
                status, size, valid = "quarantined", s.size, s.valid_bytes
            elif after is not before and (s.corrupt or _index_bad(s)) and not now.corrupt:
                status, size, valid = "repaired", now.size, now.valid_bytes
            else:
                status, size, valid = (
                    ("corrupt" if now.corrupt else "ok"),
                    now.size,
                    now.valid_bytes,
                )
            yield {
                "type": "segment",
                "file": str(s.log),
                "status": status,
                "size": size,
                "valid_bytes": valid,
            }


def _refresh(t: Target) -> Target:
    """The target as it is now on disk (a repair moves later segments away)."""
    return Target(t.partition_dir, [p for p in t.logs if p.exists()])


def _index_bad(scan) -> bool:
    return any(
        st is not None and st.status in ("wrong", "missing")
        for st in (scan.offset_index, scan.time_index)
    )
