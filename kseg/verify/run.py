"""The verify command as a library call: events out, what was found (an Outcome) accumulated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from kseg.format.kafka_version import DEFAULT as DEFAULT_KAFKA_VERSION
from kseg.format.kafka_version import KafkaVersion
from kseg.outcome import Outcome, combined
from kseg.storage import jobs
from kseg.storage.tree import Selection, Target, resolve
from kseg.verify import findings as K
from kseg.verify.kafka_outcome import kafka_recovery
from kseg.verify.partition import PartitionReport, verify_target
from kseg.verify.root_checkpoints import RootFacts, verify_root_checkpoints


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
    jobs: int | None = 1  # worker processes (None: every core); a repair runs in one


class VerifyRun:
    """``kseg verify`` without --repair: every check, read-only. kseg.repair.run.RepairRun
    extends it with the repair (its hooks: ``_prepare``, ``_target``, ``_fixed``); the CLI picks
    one of the two, so that a plain verify imports none of the repair's modules."""

    def __init__(self, opts: VerifyOptions) -> None:
        if opts.repair and type(self) is VerifyRun:
            raise ValueError("VerifyRun only verifies: kseg.repair.run.RepairRun repairs")
        self.opts = opts
        self.outcome = Outcome.OK
        self.counts = {K.ERROR: 0, K.WARNING: 0, K.INFO: 0}
        self.partitions = self.segments = self.repaired = 0
        self._expanded: tuple[Selection, list[Target]] | None = None
        self._refused: set[Path] = set()  # not verified at all (a repair's --quarantine inside)
        # held by someone else: verified read-only, as without --repair (nothing planned)
        self._locked_out: set[Path] = set()

    def _finding(self, f: K.Finding, **extra) -> dict:
        self.counts[f.severity] += 1
        return {**f.to_event(), **extra}

    def _failure(self, message: str) -> dict:
        """A failure event: the CLI writes it to stderr (one line), never to stdout."""
        self.outcome |= Outcome.UNREADABLE
        return {"type": "failure", "message": message}

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
        yield from self._events(sel)

    def _prepare(self, tlist: list[Target]) -> Iterator[dict]:
        """Before any partition is verified (a repair takes its locks here)."""
        return iter(())

    def _events(self, sel: Selection) -> Iterator[dict]:
        self._several = several = sel.several_log_dirs
        reports: dict[Path, list[RootFacts]] = {r: [] for r in sel.roots}
        tlist = self.targets(sel)
        yield from self._prepare(tlist)
        todo = []
        for t in tlist:
            if t.log_dir.resolve() in self._refused:
                reports.pop(t.log_dir, None)
            else:
                todo.append(t)
        walks = jobs.in_order(self._one, todo, self._jobs(), self)
        try:
            for t, walk in zip(todo, walks, strict=True):
                report = yield from walk
                if report is not None and t.log_dir in reports:
                    reports[t.log_dir].append(report)
        finally:
            walks.close()  # the workers stopped and reaped, also on an error
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
                self.outcome |= outcome_of([f])
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

    def _jobs(self) -> int | None:
        """How many workers walk the partitions (a repair's hook: one)."""
        return self.opts.jobs

    def _one(self, t: Target):
        """One partition's events, tagged (in this process or a worker: kseg.storage.jobs);
        returns what the root's checks need of it (RootFacts), not its report: a report holds
        every segment's rebuilt indexes (~5 MB per GiB), which the run would otherwise keep
        for every partition until the end, and a worker send to the parent."""
        read_only = t.log_dir.resolve() in self._locked_out
        tags = target_tags(t, self._several)
        report = yield from _tagged(self._target(t, read_only), tags)
        return None if report is None else RootFacts.of(report)

    # kseg.storage.jobs.Shared: the counters a worker's partition adds to the run's
    def fork_reset(self) -> None:
        self.outcome = Outcome.OK
        self.counts = dict.fromkeys(self.counts, 0)
        self.partitions = self.segments = self.repaired = 0

    def fork_state(self) -> tuple:
        return self.outcome, self.counts, self.partitions, self.segments, self.repaired

    def fork_absorb(self, state: tuple) -> None:
        outcome, counts, partitions, segments, repaired = state
        self.outcome |= outcome
        for k, v in counts.items():
            self.counts[k] += v
        self.partitions += partitions
        self.segments += segments
        self.repaired += repaired

    def _target(self, t: Target, read_only: bool = False):
        """Verify one partition: its findings and Kafka's recovery outcome, then its segments'
        status; returns its report (``read_only`` means nothing here: a repair's)."""
        self.partitions += 1
        report = yield from self._check(t)
        self.outcome |= outcome_of(report.all_findings)
        yield from self._segment_events(report, report)
        return report

    def _check(self, t: Target, replay_txns: bool = False):
        """Verify one partition, report its findings (and, but for Kafka 0.7, the outcome of
        Kafka's recovery); returns its report. An interrupt reports what was found before it."""
        opts = self.opts
        if t.kafka07:  # a Kafka 0.7 partition: its own rule
            from kseg.verify.kafka07 import verify_target07

            report = verify_target07(t, deep=opts.deep)
            for f in report.all_findings:
                yield self._finding(f)
            return report
        try:
            report = verify_target(
                t,
                deep=opts.deep,
                index_interval_bytes=opts.index_interval_bytes,
                replay_txns=replay_txns,
            )
        except BaseException as exc:  # an interrupt: report what was found before it
            partial = getattr(exc, "kseg_partial", None)
            if partial is not None and not isinstance(exc, Exception):
                self.outcome |= outcome_of(partial.all_findings)
                for f in partial.all_findings:
                    yield self._finding(f)
            raise
        for f in report.all_findings:
            yield self._finding(f)
        outcome = kafka_recovery(report)
        if outcome is not None:
            yield outcome
        return report

    def _fixed(self, scan) -> bool:
        """Did a repair fix this segment's problem (a repair's hook: nothing is fixed here)."""
        return False

    def _segment_events(self, before: PartitionReport, after: PartitionReport) -> Iterator[dict]:
        post = {s.log: s for s in after.scans}
        for s in before.scans:
            self.segments += 1
            now = post.get(s.log)
            if now is None:
                status, size, valid = "quarantined", s.size, s.valid_bytes
            elif after is not before and self._fixed(s) and not (now.corrupt or now.patches):
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


def outcome_of(found: list[K.Finding]) -> Outcome:
    """A file kseg could not read is unreadable, any other error invalid data, a warning or an
    info nothing (findings.finding_outcome)."""
    return combined(K.finding_outcome(f.kind, f.severity) for f in found)


def target_tags(t: Target, several: bool) -> dict:
    """What every event about partition ``t`` carries: its topic and partition, and its log dir
    when several are walked."""
    name = t.name
    tags = {
        "topic": name.topic if name else None,
        "partition": name.partition if name else None,
    }
    if several:
        tags["log_dir"] = str(t.log_dir)
    return tags
