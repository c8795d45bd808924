"""``kseg salvage`` as a library call: per partition, verify's scan (what Kafka's recovery would
do), the salvage walk (kseg.salvage.walk), its cost (kseg.salvage.cost), and unless --dry-run
the result written: in place as a repair manifest kseg.repair applies (lock, quarantine, fsync,
atomic steps, resumable, undone by `kseg restore`), or with --to as a new tree (input
untouched). The partition is verified again after writing.

With ``from_quarantine`` (an earlier run's quarantine) and ``include_deleted`` (Kafka's
`.log.deleted` leftovers) the walk goes on through those sources (kseg.salvage.leftovers): their
intact entries above the live log end go back as new segments. A deleted topic's partition dir
(``<topic>-<n>.<uuid>-delete``) is salvaged with --to only (as ``<topic>-<n>``).

The run reuses verify --repair's (kseg.repair.run.RepairRun): its locks, quarantine checks,
leftover cleaning and the resume of an interrupted repair or salvage of the same partition."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kseg.outcome import Outcome
from kseg.repair.run import RepairRun, _refused_file, _unreadable_file
from kseg.salvage.cost import cost_event, leftovers, log_end
from kseg.salvage.kafka import kafka_limits
from kseg.salvage.leftovers import deleted_sources, ordered, quarantine_sources
from kseg.salvage.plan import plan_salvage
from kseg.salvage.walk import AMBIGUOUS, SegmentSource, salvage_walk
from kseg.storage import jobs
from kseg.storage.tree import Selection, Target, partition_logs
from kseg.verify.partition import PartitionReport, verify_target
from kseg.verify.run import VerifyOptions, _tagged, outcome_of, target_tags

# statuses of a salvage event
CLEAN, DAMAGED, SALVAGED, WRITTEN, FAILED = "clean", "damaged", "salvaged", "written", "failed"


class SalvageRun(RepairRun):
    """kseg salvage (``opts.dry_run``: the plan and the cost only; ``to``: a new tree)."""

    def __init__(
        self,
        opts: VerifyOptions,
        to: Path | None = None,
        *,
        from_quarantine: Path | None = None,
        include_deleted: bool = False,
        keep_ambiguous: bool = False,
    ) -> None:
        super().__init__(opts._replace(repair=True))
        self.to = None if to is None else to.absolute()
        self.from_quarantine = None if from_quarantine is None else from_quarantine.absolute()
        self.include_deleted = include_deleted
        self.keep_ambiguous = keep_ambiguous
        self.writing = not opts.dry_run and to is None  # in place: locks, quarantine
        self.salvaged = 0
        self.lost_records = 0
        self.lost_bytes = 0

    def _events(self, sel: Selection) -> Iterator[dict]:
        several = sel.several_log_dirs
        tlist = self.targets(sel)
        if self.to is not None and not self.opts.dry_run:
            yield from self._check_to(tlist)
        yield from self._prepare(tlist)
        todo = [(t, t.log_dir.resolve() in self._locked_out)  # locked out: as --dry-run
                for t in tlist if t.log_dir.resolve() not in self._refused]  # fmt: skip
        resumed: dict[int, tuple] = {}
        n = jobs.workers_for(self.opts.jobs, [t for t, _ in todo])  # sized once, by stat
        if self.writing and n > 1:
            resumed = self._resume_first(todo)
        items = [(t, read_only, resumed.get(i)) for i, (t, read_only) in enumerate(todo)]
        walks = jobs.in_order(self._scan, items, n, self)
        try:
            for (t, read_only), walk in zip(todo, walks, strict=True):
                scanned = yield from _tagged(walk, target_tags(t, several))
                if scanned is not None:
                    yield from _tagged(self._salvage(read_only, *scanned), target_tags(t, several))
        finally:
            walks.close()  # the workers stopped and reaped, also on an error
        yield {
            "type": "summary",
            "partitions": self.partitions,
            "salvaged": self.salvaged,
            "lost_records_at_most": self.lost_records,
            "lost_bytes": self.lost_bytes,
            "outcome": self.outcome,
        }

    def _resume_first(self, todo: list[tuple[Target, bool]]) -> dict[int, tuple]:
        """With workers scanning (kseg.storage.jobs), the unfinished repairs and salvages of the
        partitions are finished here first, one after another (a scan must see the partition
        as the resume left it); each partition's events wait for its place in the output.
        Returns {index in ``todo``: (its events, the target as it is now or None)}."""
        out: dict[int, tuple] = {}
        for i, (t, read_only) in enumerate(todo):
            if read_only or t.kafka07 or (t.name is not None and t.name.state == "delete"):
                continue  # _scan says why it is not salvaged in place, before any resume
            evs: list[dict] = []
            resuming = self._resume(t)
            while True:
                try:
                    evs.append(next(resuming))
                except StopIteration as stop:
                    out[i] = (evs, stop.value)
                    break
        return out

    def _check_to(self, tlist: list[Target]) -> Iterator[dict]:
        """--to inside an input log dir is refused (16): Kafka would find a stray dir there."""
        from kseg.storage.locking import inside_message, is_inside

        for log_dir in dict.fromkeys(t.log_dir.resolve() for t in tlist):
            if is_inside(self.to, log_dir) or self.to.resolve() == log_dir:
                self._refused.add(log_dir)
                self.outcome |= Outcome.USAGE
                yield {
                    "type": "failure",
                    "message": f"{inside_message('--to', self.to, log_dir)}. "
                    "Not salvaging anything there",
                }

    def _scan(self, item: tuple[Target, bool, tuple | None]):
        """One partition's scan and plan, read-only (in this process or a worker:
        kseg.storage.jobs); returns what ``_salvage`` writes from, or None when it is not
        salvaged. ``read_only``: a broker holds its log dir's lock (said once, 8): its cost and
        plan are reported as with --dry-run. ``resumed``: its unfinished repair already
        resumed (``_resume_first``: the events, the target)."""
        t, read_only, resumed = item
        self.partitions += 1
        opts = self.opts
        writing = self.writing and not read_only
        if t.kafka07:
            yield {
                "type": "notice",
                "message": f"{t.partition_dir}: a Kafka 0.7 partition: not salvaged "
                "(`kseg verify --repair` repairs it)",
            }
            return None
        deleted_topic = t.name is not None and t.name.state == "delete"
        if deleted_topic and self.to is None and not opts.dry_run:
            yield {
                "type": "notice",
                "message": f"{t.partition_dir}: a deleted topic's partition (Kafka removes the dir "
                "at start): not salvaged in place; salvage it with --to DIR",
            }
            return None
        if writing:
            if resumed is None:
                t = yield from self._resume(t)
            else:
                evs, t = resumed
                yield from evs
            if t is None:
                return None
        report = verify_target(t, index_interval_bytes=opts.index_interval_bytes)
        unread = _unreadable_file(report)
        if unread is not None:
            yield self._failure(f"{t.partition_dir}: not salvaged: {unread} could not be read")
            return None
        limits, starts = kafka_limits(report)
        sources = [SegmentSource(s.log, s.log.name, s.base_offset, tuple(s.patches))
                   for s in report.scans]  # fmt: skip
        extra = yield from self._leftovers(t)
        segs = salvage_walk(
            sources + extra, log_start_offset=report.log_start_offset,
            kafka_limits=limits + [0] * len(extra), keep_ambiguous=self.keep_ambiguous,
        )  # fmt: skip
        clash = [s.put_back_name for s in leftovers(segs)
                 if (t.partition_dir / s.put_back_name).exists()]  # fmt: skip
        if clash:
            yield self._failure(
                f"{t.partition_dir / clash[0]}: exists, and a leftover's entries would go back "
                f"under that name: not salvaging {t.partition_dir}"
            )
            return None
        ev = cost_event(report, segs, limits, starts)
        plan = plan_salvage(
            report, segs, index_interval_bytes=opts.index_interval_bytes,
            kafka_version=opts.kafka_version,
        )  # fmt: skip
        if plan.reset_to is not None:
            ev["salvage_keeps"] = {
                "records": 0, "bytes": 0, "log_end": plan.reset_to, "reset_to": plan.reset_to,
            }  # fmt: skip
        for x in ev["skipped"]:
            if x["ambiguous"] and x["kind"] != AMBIGUOUS:
                done = "kept" if self.keep_ambiguous else "left out (--keep-ambiguous keeps them)"
                yield {
                    "type": "notice",
                    "message": f"{x['file']}: ambiguous resync at byte {x['end']}: the entries "
                    f"from there may be the payload of the damaged entry at byte {x['start']} "
                    f"(inside the extent its size claims, or not running on to the end): "
                    f"{done}; check them with kseg dump --resync",
                }
        return t, report, segs, plan, ev

    def _salvage(self, read_only: bool, t: Target, report: PartitionReport, segs, plan, ev):
        """Salvage one partition from its scan (``_scan``): in this process, one partition
        after another (the repair manifest, the quarantine, --to's root files)."""
        opts = self.opts
        writing = self.writing and not read_only
        # entries reached through an ambiguous resync left out: damage left (4) whatever else
        left_out = any(x.kind == AMBIGUOUS for sg in segs for x in sg.lost)
        if self.to is not None and not opts.dry_run:
            yield from self._write_to(t, report, segs, plan, ev)
            if left_out:
                self.outcome |= Outcome.INVALID_DATA
            return
        if plan.empty:
            self.outcome |= outcome_of(report.all_findings)
            yield ev
            return
        self._count(ev)
        if not writing:
            if self.to is None:  # --to --dry-run: a new tree, not these in-place actions
                for a in plan.actions:
                    yield a.to_event(True)
            self.outcome |= Outcome.INVALID_DATA
            yield {**ev, "status": DAMAGED}
            return
        refused = _refused_file(plan)
        if refused is not None:
            yield self._failure(f"{refused}: not salvaging {t.partition_dir}")
            yield {**ev, "status": FAILED}
            return
        for a in plan.actions:
            yield a.to_event(False)
        qdir, after = None, report
        applying = self._apply(t, plan, report)
        while True:
            try:
                done = next(applying)
            except StopIteration as stop:
                after = stop.value
                break
            if done["type"] == "repair_done":
                qdir = done["quarantine"]
                continue
            yield done
        if qdir is None:
            yield {**ev, "status": FAILED}
            return
        self.salvaged += 1
        self.outcome |= self._left(after)
        if left_out:
            self.outcome |= Outcome.INVALID_DATA
        yield {**ev, "status": SALVAGED, "quarantine": qdir}

    def _leftovers(self, t: Target):
        """The leftover sources of ``t`` the options name, in order (notices for those passed
        over)."""
        found, notices = [], []
        if self.from_quarantine is not None:
            q = quarantine_sources(self.from_quarantine, t.partition_dir)
            found += q.sources
            notices += q.notices
        if self.include_deleted:
            found += deleted_sources(t.partition_dir).sources
        for n in notices:
            yield {"type": "notice", "message": n}
        return ordered(found)

    def _write_to(self, t: Target, report: PartitionReport, segs, plan, ev):
        from kseg.salvage.copy_to import DestinationExists, write_partition, write_root_files

        end = log_end(segs) if plan.reset_to is None else plan.reset_to
        n = t.name
        name = t.partition_dir.name if n is None else f"{n.topic}-{n.partition}"
        try:
            out = write_partition(
                t.partition_dir, segs, self.to, end,
                index_interval_bytes=self.opts.index_interval_bytes,
                kafka_version=self.opts.kafka_version, name=name, reset_to=plan.reset_to,
            )  # fmt: skip
            write_root_files(t.log_dir, self.to, {name: end})
        except DestinationExists as exc:
            yield self._failure(f"{exc}: not salvaging {t.partition_dir}")
            return
        except OSError as exc:
            yield self._failure(
                f"{exc.filename or self.to}: {exc.strerror or exc}: not salvaged to {self.to}"
            )
            return
        after = verify_target(
            Target(out, partition_logs(out)), index_interval_bytes=self.opts.index_interval_bytes
        )
        left = outcome_of(after.all_findings)
        if not plan.empty:
            self._count(ev)
            self.salvaged += 1
            left = left or Outcome.REPAIRED
        self.outcome |= left
        yield {**ev, "status": WRITTEN, "to": str(out)}

    def _left(self, after: PartitionReport) -> Outcome:
        """What verify still finds after the salvage (none: salvaged)."""
        return outcome_of(after.all_findings) or Outcome.REPAIRED

    def _count(self, ev: dict) -> None:
        self.lost_records += ev["lost"]["records_at_most"]
        self.lost_bytes += ev["lost"]["bytes"]
