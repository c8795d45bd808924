"""The verify command as a library call: events out, what was found (an Outcome) accumulated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kseg.format.kafka_version import DEFAULT as DEFAULT_KAFKA_VERSION
from kseg.format.kafka_version import KafkaVersion
from kseg.outcome import Outcome, combined
from kseg.storage.tree import Selection, Target, resolve
from kseg.verify import findings as K
from kseg.verify.kafka_outcome import kafka_recovery
from kseg.verify.partition import PartitionReport, verify_target
from kseg.verify.root_checkpoints import verify_root_checkpoints

if TYPE_CHECKING:
    from kseg.repair.quarantine import Quarantine
    from kseg.storage.lock import LogDirLocks

# The repair's modules (kseg.repair.*, storage.lock, storage.space)
# are imported by --repair only: a plain verify starts faster without them.

_COUNTED = (K.ERROR, K.WARNING)


class VerifyOptions(NamedTuple):
    deep: bool = False
    repair: bool = False
    dry_run: bool = False
    keep_later_segments: bool = False
    quarantine: Path | None = None
    force: bool = False
    index_interval_bytes: int = 4096
    kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION
    topic: str | None = None
    partition: int | None = None


class VerifyRun:
    def __init__(self, opts: VerifyOptions) -> None:
        self.opts = opts
        self.outcome = Outcome.OK
        self.counts = {K.ERROR: 0, K.WARNING: 0, K.INFO: 0}
        self.partitions = self.segments = self.repaired = 0
        self.writing = opts.repair and not opts.dry_run
        self._locks: LogDirLocks | None = None  # taken by a repair only
        self._quarantines: dict[Path, Quarantine] = {}
        self._unfinished: dict[Path, list] = {}  # quarantine root -> its unfinished manifests
        self._expanded: tuple[Selection, list[Target]] | None = None

    def _finding(self, f: K.Finding, **extra) -> dict:
        self.counts[f.severity] += 1
        return {**f.to_event(), **extra}

    def _failure(self, message: str) -> dict:
        """A failure event: the CLI writes it to stderr (one line), never to stdout."""
        self.outcome |= Outcome.UNREADABLE
        return {"type": "failure", "message": message}

    def _quarantine(self, t: Target) -> Quarantine:
        from kseg.repair.quarantine import Quarantine, default_quarantine_root

        root = self.opts.quarantine or default_quarantine_root(t.log_dir)
        key = root.absolute()
        if key not in self._quarantines:
            self._quarantines[key] = Quarantine(key)
        return self._quarantines[key]

    def _quarantine_roots(self, t: Target) -> list[Path]:
        """Where an unfinished repair of ``t`` may be: the default place and --quarantine."""
        from kseg.repair.quarantine import default_quarantine_root

        roots = [default_quarantine_root(t.log_dir)]
        if self.opts.quarantine is not None:
            roots.insert(0, self.opts.quarantine)
        return roots

    def _lock_log_dirs(self, tlist: list[Target]) -> Iterator[dict]:
        """Take every log dir's `.lock` before anything is planned; report each refusal once."""
        from kseg.storage.lock import LogDirLocks
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

    def targets(self, sel: Selection) -> list[Target]:
        """The selection's targets, expanded once (the progress bar sizes them, the run walks
        them)."""
        if self._expanded is None or self._expanded[0] is not sel:
            self._expanded = (sel, sel.targets())
        return self._expanded[1]

    def events(self, inputs: list[Path] | Selection) -> Iterator[dict]:
        """Every event of the run. Objects from a partition carry ``topic`` and ``partition``;
        with several log.dirs roots, every object (but the summary) also names its ``log_dir``."""
        sel = (
            inputs
            if isinstance(inputs, Selection)
            else resolve(inputs, self.opts.topic, self.opts.partition, logs_only=True)
        )
        try:
            yield from self._events(sel)
        finally:
            if self._locks is not None:
                self._locks.release()

    def _events(self, sel: Selection) -> Iterator[dict]:
        several = sel.several_log_dirs
        reports: dict[Path, list[PartitionReport]] = {r: [] for r in sel.roots}
        tlist = self.targets(sel)
        self._refused: set[Path] = set()  # not verified at all (--quarantine inside them)
        # held by someone else: verified read-only, as without --repair (nothing planned)
        self._locked_out: set[Path] = set()
        if self.writing:  # every lock before anything is verified or planned
            tlist = list(tlist)
            yield from self._lock_log_dirs(tlist)
        if self.opts.repair:
            yield from self._check_quarantine(tlist)
        for t in tlist:
            if t.log_dir.resolve() in self._refused:
                reports.pop(t.log_dir, None)
                continue
            name = t.name
            tags = {
                "topic": name.topic if name else None,
                "partition": name.partition if name else None,
            }
            if several:
                tags["log_dir"] = str(t.log_dir)
            read_only = t.log_dir.resolve() in self._locked_out
            report = yield from _tagged(self._target(t, read_only), tags)
            if report is not None and t.log_dir in reports:
                reports[t.log_dir].append(report)
        unfiltered = self.opts.topic is None and self.opts.partition is None
        for root, reps in reports.items():
            found = verify_root_checkpoints(root, reps)
            if not unfiltered:  # a selection selects partitions: not the root's own files
                found = [(f, tags) for f, tags in found if tags["topic"] is not None]
            if not reps and unfiltered:  # say so: "0 partitions" alone looks clean
                why = "log.dirs root without partition directories: only its root files checked"
                empty = K.Finding(K.INFO, K.NO_SEGMENTS, str(root), None, None, why)
                found.insert(0, (empty, {"topic": None, "partition": None}))
            for f, tags in found:
                self.outcome |= _outcome_of([f])
                ev = self._finding(f, **tags)
                yield {**ev, "log_dir": str(root)} if several else ev
        yield {
            "type": "summary",
            "partitions": self.partitions,
            "segments": self.segments,
            "errors": self.counts[K.ERROR],
            "warnings": self.counts[K.WARNING],
            "infos": self.counts[K.INFO],
            "repaired": self.repaired,
            "outcome": self.outcome,
        }

    def _target(self, t: Target, read_only: bool = False):
        """Verify one partition, and with --repair plan (and unless --dry-run apply) its repair;
        ``read_only``: its log dir's lock is held by someone else, so it is only verified (its
        findings reported, no plan), as without --repair."""
        opts = self.opts
        self.partitions += 1
        writing = self.writing and not read_only
        repair = opts.repair and not read_only
        if writing:
            from kseg.repair.errors import RepairFailed
            from kseg.repair.manifest import RESTORING
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
            t = _refresh(t)  # a resumed repair may have moved segments away
        if t.kafka07:  # a Kafka 0.7 partition: its own rule, the same repair machinery
            from kseg.verify.kafka07 import verify_target07

            report = verify_target07(t, deep=opts.deep)
            for f in report.all_findings:
                yield self._finding(f)
            plan = None
            if repair:
                from kseg.repair.plan07 import plan_repair07

                plan = plan_repair07(report, keep_later_segments=opts.keep_later_segments)
        else:
            if repair:
                from kseg.repair.plan import plan_repair
            try:
                report = verify_target(
                    t,
                    deep=opts.deep,
                    index_interval_bytes=opts.index_interval_bytes,
                    replay_txns=writing,  # the repair then writes the indexes this scan rebuilt
                )
            except BaseException as exc:  # an interrupt: report what was found before it
                partial = getattr(exc, "kseg_partial", None)
                if partial is not None and not isinstance(exc, Exception):
                    self.outcome |= _outcome_of(partial.all_findings)
                    for f in partial.all_findings:
                        yield self._finding(f)
                raise
            for f in report.all_findings:
                yield self._finding(f)
            outcome = kafka_recovery(report)
            if outcome is not None:
                yield outcome
            plan = (
                plan_repair(
                    report,
                    keep_later_segments=opts.keep_later_segments,
                    index_interval_bytes=opts.index_interval_bytes,
                    kafka_version=opts.kafka_version,
                )
                if repair
                else None
            )
        after = report
        if plan is not None and not plan.empty:
            for a in plan.actions:
                yield a.to_event(opts.dry_run or not writing)
            if writing:
                from kseg.repair.apply import apply_plan
                from kseg.repair.errors import RepairError, RepairFailed
                from kseg.repair.manifest import ManifestError
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
                else:
                    self.repaired += 1
                    yield {
                        "type": "repair_done",
                        "partition_dir": str(t.partition_dir),
                        "quarantine": str(qdir),
                        "actions": len(plan.actions),
                    }
                    after = (
                        verify_target07(_refresh(t), deep=opts.deep)
                        if t.kafka07
                        else verify_target(
                            _refresh(t),
                            deep=opts.deep,
                            index_interval_bytes=opts.index_interval_bytes,
                        )
                    )
        if after is not report:
            remaining = [f for f in after.all_findings if f.severity in _COUNTED]
            for f in remaining:
                yield {**f.to_event(), "remaining": True}
            self.outcome |= _outcome_of(remaining) or Outcome.REPAIRED
        else:
            self.outcome |= _outcome_of(report.all_findings)
        yield from self._segment_events(report, after)
        return after

    def _segment_events(self, before: PartitionReport, after: PartitionReport) -> Iterator[dict]:
        post = {s.log: s for s in after.scans}
        if after is not before:  # repaired: what the repair fixed (kseg.repair.plan)
            from kseg.repair.plan import index_problem
        for s in before.scans:
            self.segments += 1
            now = post.get(s.log)
            if now is None:
                status, size, valid = "quarantined", s.size, s.valid_bytes
            elif (
                after is not before
                and (s.corrupt or s.patches or index_problem(s))
                and not (now.corrupt or now.patches)
            ):
                status, size, valid = "repaired", now.size, now.valid_bytes
            else:
                status, size, valid = (
                    ("corrupt" if now.corrupt or now.patches else "ok"),
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


def _tagged(gen, tags: dict):
    """Yield ``gen``'s events with ``tags`` added; return what it returns."""
    while True:
        try:
            ev = next(gen)
        except StopIteration as stop:
            return stop.value
        yield {**ev, **tags}


def _outcome_of(found: list[K.Finding]) -> Outcome:
    """A file kseg could not read is unreadable, any other error invalid data, a warning or an
    info nothing (findings.finding_outcome)."""
    return combined(K.finding_outcome(f.kind, f.severity) for f in found)


def _refresh(t: Target) -> Target:
    """The target as it is now on disk (a repair moves later segments away)."""
    return Target(t.partition_dir, [p for p in t.logs if p.exists()])
