"""``kseg verify --repair`` as a library call: verify's run (kseg.verify.run) plus, per partition,
an unfinished repair resumed, the repair planned (and unless --dry-run applied) and the partition
verified again. The log dirs' locks are taken before anything is verified or planned."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from kseg.outcome import Outcome
from kseg.repair.errors import RepairError, RepairFailed
from kseg.repair.manifest import RESTORING, ManifestError
from kseg.repair.plan import index_problem, plan_repair
from kseg.repair.quarantine import Quarantine, default_quarantine_root
from kseg.storage.lock import LogDirLocks
from kseg.storage.tree import Selection, Target
from kseg.verify import findings as K
from kseg.verify.partition import PartitionReport, verify_target
from kseg.verify.run import VerifyOptions, VerifyRun, outcome_of

_COUNTED = (K.ERROR, K.WARNING)


class RepairRun(VerifyRun):
    """verify --repair (``opts.repair``), or its plan only (``opts.dry_run``)."""

    def __init__(self, opts: VerifyOptions) -> None:
        if not opts.repair:
            raise ValueError("RepairRun repairs: VerifyOptions(repair=True)")
        super().__init__(opts)
        self.writing = not opts.dry_run
        self._locks: LogDirLocks | None = None  # taken by a repair only
        self._quarantines: dict[Path, Quarantine] = {}
        self._unfinished: dict[Path, list] = {}  # quarantine root -> its unfinished manifests

    def events(self, inputs: list[Path] | Selection) -> Iterator[dict]:
        try:
            yield from super().events(inputs)
        finally:
            if self._locks is not None:
                self._locks.release()

    def _jobs(self) -> int:
        """A repair writes (a manifest, locks, the quarantine): one partition after another."""
        return 1

    def _prepare(self, tlist: list[Target]) -> Iterator[dict]:
        if self.writing:  # every lock before anything is verified or planned
            yield from self._lock_log_dirs(tlist)
        yield from self._check_quarantine(tlist)
        if self.writing:
            yield from self._clean_leftovers(tlist)

    def _clean_leftovers(self, tlist: list[Target]) -> Iterator[dict]:
        """What a killed run left, removed and said (one notice per directory): kseg's temp
        files in the log dirs this run holds the lock of, their partition dirs, and their
        quarantines (there, only of runs no longer running)."""
        from kseg.repair.quarantine import clean_quarantine
        from kseg.storage.atomic import remove_stale_temps, removed_message

        skip = self._locked_out | self._refused
        log_dirs = dict.fromkeys(t.log_dir for t in tlist if t.log_dir.resolve() not in skip)
        places = dict.fromkeys(
            [*log_dirs, *(t.partition_dir for t in tlist if t.log_dir in log_dirs)]
        )
        for place in places:
            removed = remove_stale_temps(place)
            if removed:
                yield {"type": "notice", "message": removed_message(place, removed)}
        roots = {default_quarantine_root(d) for d in log_dirs}
        if self.opts.quarantine is not None and log_dirs:
            roots.add(self.opts.quarantine.absolute())
        for root in sorted(roots):
            for qdir, removed in clean_quarantine(root):
                yield {"type": "notice", "message": removed_message(qdir, removed)}

    def _quarantine(self, t: Target) -> Quarantine:
        root = self.opts.quarantine or default_quarantine_root(t.log_dir)
        key = root.absolute()
        if key not in self._quarantines:
            self._quarantines[key] = Quarantine(key)
        return self._quarantines[key]

    def _quarantine_roots(self, t: Target) -> list[Path]:
        """Where an unfinished repair of ``t`` may be: the default place and --quarantine."""
        roots = [default_quarantine_root(t.log_dir)]
        if self.opts.quarantine is not None:
            roots.insert(0, self.opts.quarantine)
        return roots

    def _lock_log_dirs(self, tlist: list[Target]) -> Iterator[dict]:
        """Take every log dir's `.lock` before anything is planned; report each refusal once."""
        from kseg.storage.locking import lock_log_dirs

        self._locks = LogDirLocks(force=self.opts.force)
        self._locked_out, said = lock_log_dirs(self._locks, (t.log_dir for t in tlist), "repairing")
        for ev in said:
            if ev["type"] == "failure":
                self.outcome |= Outcome.UNREADABLE
                ev["message"] += " (verified read-only: every finding is still reported)"
            yield ev

    def _check_quarantine(self, tlist: list[Target]) -> Iterator[dict]:
        """--quarantine inside a log dir is refused (16) for that log dir; --dry-run says so
        too, so that it predicts the real run."""
        q = self.opts.quarantine
        if q is not None:
            from kseg.storage.locking import inside_message, is_inside

            for log_dir in {t.log_dir.resolve() for t in tlist} - self._refused - self._locked_out:
                if is_inside(q, log_dir):
                    self._refused.add(log_dir)
                    self.outcome |= Outcome.USAGE
                    yield {
                        "type": "failure",
                        "message": f"{inside_message('--quarantine', q, log_dir)}. "
                        "Not repairing anything there",
                    }

    def _resume(self, t: Target):
        """Finish (or drop) an unfinished repair of ``t`` first; returns the target as it is
        now, or None when ``t`` is not to be repaired (an interrupted restore, a failure)."""
        from kseg.repair.resume import resume, unfinished_work

        found = unfinished_work(self._quarantine_roots(t), t.partition_dir, self._unfinished)
        restoring = [q for q, status in found if status == RESTORING]
        if restoring:
            yield self._failure(
                f"{t.partition_dir}: a restore from {restoring[0]} was interrupted; finish it "
                f"first (`kseg restore {restoring[0]}`), then verify again; not repairing"
            )
            return None
        for qdir, _ in found:
            try:
                done = resume(qdir)
            except RepairFailed as exc:
                yield self._failure(str(exc))
                return None
            if done is None:
                yield {
                    "type": "notice",
                    "message": f"{qdir}: dropped an unfinished repair that had not changed "
                    f"{t.partition_dir} yet, which changed since; planning anew",
                }
                continue
            self.outcome |= Outcome.REPAIRED
            self.repaired += 1
            yield {
                "type": "repair_resumed",
                "partition_dir": str(t.partition_dir),
                "quarantine": str(qdir),
            }
        return refresh(t)  # a resumed repair may have moved segments away

    def _target(self, t: Target, read_only: bool = False):
        """Verify one partition, plan its repair and (unless --dry-run) apply it; ``read_only``:
        its log dir's lock is held by someone else, so it is only verified (its findings
        reported, no plan), as without --repair."""
        if read_only:
            return (yield from super()._target(t))
        opts = self.opts
        self.partitions += 1
        if self.writing:
            t = yield from self._resume(t)
            if t is None:
                return None
        # the repair then writes the indexes this scan rebuilt
        report = yield from self._check(t, replay_txns=self.writing)
        unread = _unreadable_file(report)
        if unread is not None:  # a plan from part of the partition could be wrong: none
            yield self._failure(
                f"{t.partition_dir}: not repaired: {unread} could not be read (see above); "
                "repair it once every file of the partition reads"
            )
            return (yield from self._unrepaired(report))
        if t.kafka07:  # a Kafka 0.7 partition: its own rule, the same repair machinery
            from kseg.repair.plan07 import plan_repair07

            plan = plan_repair07(report, keep_later_segments=opts.keep_later_segments)
        else:
            plan = plan_repair(
                report,
                keep_later_segments=opts.keep_later_segments,
                index_interval_bytes=opts.index_interval_bytes,
                kafka_version=opts.kafka_version,
            )
        refused = _refused_file(plan)
        if refused is not None:  # said alike by --dry-run, so that it predicts the real run
            yield self._failure(f"{refused}: not repairing {t.partition_dir}")
            return (yield from self._unrepaired(report))
        after = report
        if not plan.empty:
            for a in plan.actions:
                yield a.to_event(not self.writing)
            if self.writing:
                after = yield from self._apply(t, plan, report)
        if after is not report:
            remaining = [f for f in after.all_findings if f.severity in _COUNTED]
            for f in remaining:
                yield {**f.to_event(), "remaining": True}
            self.outcome |= outcome_of(remaining) or Outcome.REPAIRED
        else:
            self.outcome |= outcome_of(report.all_findings)
        yield from self._segment_events(report, after)
        return after

    def _unrepaired(self, report: PartitionReport):
        """A partition verified but not repaired: its findings count as they are."""
        self.outcome |= outcome_of(report.all_findings)
        yield from self._segment_events(report, report)
        return report

    def _apply(self, t: Target, plan, report: PartitionReport):
        """Apply ``plan``; returns the partition's report after it (``report`` if it failed)."""
        from kseg.repair.apply import apply_plan
        from kseg.storage.space import NoSpace

        failure = None
        try:
            qdir = apply_plan(plan, self._quarantine(t))
        except RepairFailed as exc:
            failure = str(exc)
        except NoSpace as exc:
            failure = f"{t.partition_dir}: not repaired: {exc}, or pass --quarantine DIR"
        except (RepairError, ManifestError) as exc:
            failure = f"{t.partition_dir}: not repaired: {exc}"
        except OSError as exc:  # before the quarantine dir existed: nothing changed
            where = exc.filename or t.partition_dir
            failure = f"{where}: {exc.strerror or exc}: not repaired, nothing was changed"
        if failure is not None:
            yield self._failure(failure)
            return report
        self.repaired += 1
        yield {
            "type": "repair_done",
            "partition_dir": str(t.partition_dir),
            "quarantine": str(qdir),
            "actions": len(plan.actions),
        }
        opts = self.opts
        if t.kafka07:
            from kseg.verify.kafka07 import verify_target07

            return verify_target07(refresh(t), deep=opts.deep)
        return verify_target(
            refresh(t), deep=opts.deep, index_interval_bytes=opts.index_interval_bytes
        )

    def _fixed(self, scan) -> bool:
        return bool(scan.corrupt or scan.patches or index_problem(scan))


def refresh(t: Target) -> Target:
    """The target as it is now on disk (a repair moves later segments away). A link whose
    target is gone is still there (os.path.lexists): reported, never silently dropped."""
    return Target(t.partition_dir, [p for p in t.logs if os.path.lexists(p)])


def _unreadable_file(report: PartitionReport) -> str | None:
    """The first file of the partition verify could not read (None: every file read)."""
    for f in report.all_findings:
        if f.kind == K.UNREADABLE:
            return f.file
    return None


def _refused_file(plan) -> str | None:
    """'<file>: <why>' for the first file the plan would change that is a symlink or a special
    file (kseg.storage.links: a writer never writes through one); None when there is none."""
    from kseg.storage.links import write_refusal

    for a in plan.actions:
        why = write_refusal(a.file)
        if why is not None:
            return f"{a.file}: {why}"
    return None
