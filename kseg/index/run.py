"""`kseg index rebuild` and `kseg index check` as library calls: events out, what was
found accumulated in ``outcome`` (read at any time: a closed pipe stops output early)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kseg.format.kafka_version import DEFAULT as DEFAULT_KAFKA_VERSION
from kseg.format.kafka_version import KafkaVersion
from kseg.outcome import BadOption, Outcome
from kseg.storage import jobs
from kseg.storage.mapped import read_slices
from kseg.storage.tree import Selection, Target
from kseg.verify.index_check import WRONG

# RebuildRun's modules (rebuild, locks, atomic writes) are imported by RebuildRun: `index check`
# does not need them (start-up time).

INDEX_STATUSES = ("identical", "equivalent", "missing", "wrong")  # in order of gravity


def target_tags(t: Target, several: bool) -> dict:
    """topic, partition (and log_dir with several roots) for a target's JSON objects."""
    name = t.name
    tags = {"topic": name.topic, "partition": name.partition} if name else {}
    if several:
        tags["log_dir"] = str(t.log_dir)
    return tags or {"topic": None, "partition": None}


def _unreadable(exc: OSError, where: Path, suffix: str = "") -> dict:
    return {"type": "failure", "message": f"{exc.filename or where}: {exc.strerror or exc}{suffix}"}


def _drain(walk) -> None:
    """Consume the rest of a partition's walk (a worker's events must all be taken) after a
    failure; a read error in it is the one already reported."""
    try:
        for _ in walk:
            pass
    except OSError:
        pass


def _without_07(run, verb: str) -> Iterator[dict]:
    """Take the Kafka 0.7 partitions out of ``run.targets``: they have no index files. Each is
    named on stderr; when nothing else is left, that is a usage error (16), never a clean run."""
    kept = []
    for t in run.targets:
        if t.kafka07:
            yield {
                "type": "notice",
                "message": f"{t.partition_dir}: a Kafka 0.7 partition (.kafka segments) has no "
                f"index files to {verb}; `kseg verify` checks it",
            }
        else:
            kept.append(t)
    if run.targets and not kept:
        run.outcome |= Outcome.USAGE
    run.targets = kept


class RebuildRun(jobs.NoCounters):  # its workers move no counters (kseg.storage.jobs)
    """Write each segment's indexes exactly as Kafka's LogSegment.recover would."""

    def __init__(
        self,
        sel: Selection,
        *,
        index_interval_bytes: int = 4096,
        preallocate: bool = False,
        segment_index_bytes: int = 10 * 1024 * 1024,
        dry_run: bool = False,
        backup: Path | None = None,
        force: bool = False,
        kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION,
        jobs: int | None = 1,
    ) -> None:
        from kseg.storage.lock import LogDirLocks
        from kseg.storage.locking import inside_message, is_inside

        self.outcome = Outcome.OK
        self.targets = sel.required_targets("rebuild indexes in")
        self.several = sel.several_log_dirs
        self.dry_run = dry_run
        self.backup = backup
        self.jobs = jobs  # processes reading the partitions (None: every core); one writes
        self._rebuild = dict(
            index_interval_bytes=index_interval_bytes,
            preallocate=preallocate,
            offset_index_bytes=segment_index_bytes,
            dry_run=dry_run,
            backup_dir=backup,
            kafka_version=kafka_version,
        )
        self.locks = LogDirLocks(force=force)
        if backup is not None:  # a usage mistake: before anything is locked or written
            for log_dir in {t.log_dir.resolve() for t in self.targets}:
                if is_inside(backup, log_dir):
                    raise BadOption(inside_message("", backup, log_dir), "--backup")

    def events(self) -> Iterator[dict]:
        """Every event; the log dirs' locks are held until the events are consumed."""
        with self.locks:
            yield from self._events()

    def _events(self) -> Iterator[dict]:
        from kseg.storage.locking import lock_log_dirs

        refused: set[Path] = set()
        if not self.dry_run:  # every log dir's lock before anything is written
            refused, said = lock_log_dirs(
                self.locks, (t.log_dir for t in self.targets), "rebuilding"
            )
            if refused:
                self.outcome |= Outcome.UNREADABLE
            yield from said
        self.segments = self.changed = 0
        yield from _without_07(self, "rebuild")
        todo = [t for t in self.targets if t.log_dir.resolve() not in refused]
        # the workers only read (kseg.storage.jobs): this process writes, one partition after
        # another, as with --jobs 1; a partition named twice is read in one
        n = self.jobs if len({t.partition_dir for t in todo}) == len(todo) else 1
        walks = jobs.in_order(self._read, todo, n, self)
        try:
            for t, walk in zip(todo, walks, strict=True):
                yield from self._write(t, walk)
        finally:
            walks.close()  # the workers stopped before the locks go
        yield {
            "type": "summary",
            "segments": self.segments,
            "files_changed": self.changed,
            "dry_run": self.dry_run,
            "outcome": self.outcome,
        }

    def _read(self, t: Target) -> Iterator[dict]:
        """Read only (in this process or a worker): a ``_check`` event (the file that refuses
        the partition's rebuild, or None), then a ``_plan`` per wanted segment (its rebuilt
        indexes)."""
        from kseg.index.rebuild import rebuilt_segments

        linked = self._refused_file(t)
        yield {"type": "_check", "linked": linked}
        if linked is not None:
            return
        for log, scan, rebuilt, last in rebuilt_segments(
            t,
            index_interval_bytes=self._rebuild["index_interval_bytes"],
            kafka_version=self._rebuild["kafka_version"],
        ):
            yield {
                "type": "_plan",
                "log": log,
                "rebuilt": rebuilt,
                "last": last,
                "base_offset": scan.base_offset,
                "size": scan.size,
                "valid_bytes": scan.valid_bytes,
                "error": scan.first_error.to_event() if scan.first_error else None,
            }

    def _write(self, t: Target, walk) -> Iterator[dict]:
        """Write a partition's indexes from its ``_read`` events (``walk``), each segment's before
        the next one's are read; then its events (none but a failure when a read or a write
        fails: the segments before it are rebuilt)."""
        from kseg.index.rebuild import UNCHANGED, write_indexes
        from kseg.storage.atomic import fix_hint, remove_stale_temps, removed_message

        done = []
        try:
            linked = next(walk)["linked"]
            if linked is not None:  # said alike by --dry-run: it predicts the real run
                _drain(walk)
                self.outcome |= Outcome.UNREADABLE
                yield {"type": "failure", "message": f"{linked}: not rebuilt"}
                return
            if not self.dry_run and self.locks.holds(t.log_dir):
                removed = remove_stale_temps(t.partition_dir)  # of a run killed before
                if removed:
                    yield {"type": "notice", "message": removed_message(t.partition_dir, removed)}
            for plan in walk:
                pad = self._rebuild["preallocate"] and plan["last"]
                files = write_indexes(
                    plan["log"],
                    plan["rebuilt"],
                    self._rebuild["offset_index_bytes"] if pad else None,
                    dry_run=self.dry_run,
                    backup_dir=self.backup,
                    target=t,
                )
                del plan["rebuilt"]  # written: only its numbers are kept for the events
                done.append((plan, files))
        except OSError as exc:
            _drain(walk)
            self.outcome |= Outcome.UNREADABLE
            yield _unreadable(exc, t.partition_dir, f": not rebuilt{fix_hint(exc)}")
            return
        for plan, files in done:
            self.segments += 1
            self.changed += sum(f.action != UNCHANGED for f in files)
            if plan["error"] is not None:
                self.outcome |= Outcome.INVALID_DATA
            yield {
                "type": "index_rebuild",
                "file": str(plan["log"]),
                **target_tags(t, self.several),
                "base_offset": plan["base_offset"],
                "size": plan["size"],
                "valid_bytes": plan["valid_bytes"],
                "dry_run": self.dry_run,
                "files": [f.to_dict() for f in files],
                "error": plan["error"],
            }

    def _refused_file(self, t: Target) -> str | None:
        """'<file>: <why>' for the first index file the rebuild of ``t`` would change that is a
        symlink or a special file (kseg.storage.links: never written through), so that nothing
        of the partition is written; None when there is none. Only a partition holding such a
        file is scanned twice (a dry run first, to learn what would change)."""
        from kseg.index.rebuild import UNCHANGED, rebuild_target
        from kseg.storage.links import write_refusal

        suspects = {}
        for log in t.logs:
            for suffix in (".index", ".timeindex", ".txnindex"):
                why = write_refusal(log.with_suffix(suffix))
                if why is not None:
                    suspects[log.with_suffix(suffix)] = why
        if not suspects:
            return None
        dry = rebuild_target(t, **{**self._rebuild, "dry_run": True, "backup_dir": None})
        for r in dry:
            for f in r.files:
                if f.action != UNCHANGED and f.file in suspects:
                    return f"{f.file}: {suspects[f.file]}"
        return None


class CheckRun(jobs.NoCounters):  # its workers move no counters (kseg.storage.jobs)
    """Compare existing indexes with a rebuild: identical, equivalent, missing or wrong."""

    def __init__(
        self,
        sel: Selection,
        *,
        index_interval_bytes: int = 4096,
        kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION,
        jobs: int | None = 1,
    ) -> None:
        self.outcome = Outcome.OK
        self.targets = sel.required_targets("check indexes in")
        self.jobs = jobs  # worker processes (None: every core)
        self.several = sel.several_log_dirs
        self.index_interval_bytes = index_interval_bytes
        self.kafka_version = kafka_version

    def events(self) -> Iterator[dict]:
        counts = dict.fromkeys(INDEX_STATUSES, 0)
        yield from _without_07(self, "check")
        walks = jobs.in_order(self._check, self.targets, self.jobs, self)
        try:
            for walk in walks:
                for ev in walk:  # counted here, as shown: a closed pipe's exit status is exact
                    if ev["type"] == "failure":
                        self.outcome |= Outcome.UNREADABLE
                    else:
                        counts[ev["status"]] += 1
                        if ev["status"] == WRONG or ev["log_error"] is not None:
                            self.outcome |= Outcome.INVALID_DATA
                    yield ev
        finally:
            walks.close()
        yield {"type": "summary", **counts, "outcome": self.outcome}

    def _check(self, t: Target) -> Iterator[dict]:
        """One partition's events (in this process or a worker: kseg.storage.jobs)."""
        order = {s: n for n, s in enumerate(INDEX_STATUSES)}
        if not t.logs:  # none, or the directory could not be listed: say which
            try:
                next(t.partition_dir.iterdir(), None)
            except OSError as exc:
                yield _unreadable(exc, t.partition_dir)
        for log, scan, txn_status in self._scans(t):
            if scan is None:  # an OSError: name the file that failed (the log or an index)
                yield _unreadable(txn_status, log)
                continue
            status = max(
                (scan.offset_index.status, scan.time_index.status, txn_status.status),
                key=order.__getitem__,
            )
            yield {
                "type": "index_check",
                "file": str(log),
                **target_tags(t, self.several),
                "status": status,
                "offset_index": scan.offset_index.to_dict(),
                "time_index": scan.time_index.to_dict(),
                "txn_index": txn_status.to_dict(),
                "log_error": scan.first_error.to_event() if scan.first_error else None,
            }

    def _scans(self, t: Target) -> Iterator[tuple]:
        """(log, scan, `.txnindex` status) per wanted log, or (log, None, OSError). The whole
        partition is replayed from its first segment, as `index rebuild` does: a transaction's
        first offset may lie in an earlier segment."""
        from kseg.format.kafka_version import TXN_RULE_EMPTY_ABORTS, TXN_RULE_OPEN_ONLY, txn_rule
        from kseg.format.txn_state import TxnTracker
        from kseg.storage.tree import segment_logs
        from kseg.verify.index_check import txn_index_status
        from kseg.verify.segment import aborted_under, scan_segment
        from kseg.verify.txn_seed import seed_from_snapshot

        wanted = set(t.logs)
        try:
            logs = segment_logs(t.partition_dir)
        except OSError:
            logs = []
        if not wanted.issubset(logs):  # the listing failed or changed: each log on its own
            logs = list(t.logs)
        txn = TxnTracker()
        if logs:
            seed_from_snapshot(txn, logs[0])
        chosen = txn_rule(self.kafka_version)
        for log in logs:
            try:
                scan = scan_segment(
                    log,
                    index_interval_bytes=self.index_interval_bytes,
                    check_indexes=log in wanted,
                    txn=txn,
                )
                if log not in wanted:
                    continue
                path = log.with_suffix(".txnindex")
                existing = read_slices(path) if path.exists() else None
            except OSError as exc:
                if log in wanted:
                    yield log, None, exc
                continue
            by_rule = {
                rule: aborted_under(scan, rule == TXN_RULE_EMPTY_ABORTS)
                for rule in (TXN_RULE_OPEN_ONLY, TXN_RULE_EMPTY_ABORTS)
            }
            mine = by_rule.pop(chosen)
            yield log, scan, txn_index_status(existing, mine, by_rule)
