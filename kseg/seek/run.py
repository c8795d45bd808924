"""The seek command as a library call: one answer event per partition, what was found in
``outcome``; reset-csv rows (one per topic-partition) from the same answers."""

from __future__ import annotations

from collections.abc import Iterator

from kseg.events import Event
from kseg.outcome import BadOption, Outcome
from kseg.seek.seek import EARLIEST, LATEST, SPECIAL_NAMES, reset_rows, seek_offset, seek_time
from kseg.seek.seek07 import seek_offset07, seek_time07
from kseg.seek.timeexpr import parse_time
from kseg.storage.tree import Selection


def parse_target(value: str, now_ms: int | None = None) -> int:
    """--time as the target ListOffsets takes: epoch ms, a special target (-1 latest, -2
    earliest, -3 max-timestamp, or their names), an ISO or relative time (``now_ms``: what a
    relative time counts from, the parsed --now; None: the clock). A bad value is a usage
    mistake (BadOption)."""
    v = value.strip().lower()
    if v in SPECIAL_NAMES:
        return SPECIAL_NAMES[v]
    if v.lstrip("-").isdigit():
        n = int(v)  # epoch ms, or a special target number (-1, -2, -3)
        if not -(1 << 63) <= n < 1 << 63:
            raise BadOption(f"{value} is outside the 64-bit range of Kafka timestamps", "--time")
        return n
    try:
        # an ISO or relative time before 1970 means "from the start", not a special target
        return max(0, parse_time(value, now_ms))
    except ValueError as exc:
        raise BadOption(str(exc), "--time") from None


class SeekRun:
    """``target`` (a --time) or ``offset`` (an --offset) in every selected partition. Each
    answer is an Event ``about`` its partition dir. ``fill_latest``: a partition with no record
    at or after the time answers its log end offset (kafka-consumer-groups' --to-datetime)."""

    def __init__(
        self,
        sel: Selection,
        *,
        target: int | None = None,
        offset: int | None = None,
        data_only: bool = False,
        fill_latest: bool = False,
        topic: str | None = None,
        read_committed: bool = False,
    ) -> None:
        self.targets = sel.required_targets("seek in")
        self.topic = topic  # the --topic regex: which internal topics reset-csv may name
        self.several = sel.several_log_dirs
        self.target, self.offset = target, offset
        self.data_only = data_only
        self.fill_latest = fill_latest and target is not None
        # ListOffsets under read_committed: latest is the last stable offset (one replay of the
        # partition's transactions, kseg.storage.txn_replay)
        self.read_committed = read_committed
        self.outcome = Outcome.OK

    def events(self) -> Iterator[dict]:
        for t in self.targets:
            pdir = t.partition_dir
            lso = None
            try:
                if t.kafka07:  # byte offsets; time by segment mtimes (0.7's rule)
                    res = (
                        seek_time07(pdir, self.target)
                        if self.target is not None
                        else seek_offset07(pdir, self.offset)
                    )
                else:
                    lso, stopped = self._lso(pdir) if self.read_committed else (None, None)
                    if stopped is not None:  # the LSO is at most there: said, exit 4
                        from kseg.storage.isolation import replay_stopped

                        self.outcome |= Outcome.INVALID_DATA
                        yield {
                            "type": "failure",
                            "message": f"{stopped}{replay_stopped()}",
                        }
                    res = (
                        seek_time(pdir, self.target, data_only=self.data_only, lso=lso)
                        if self.target is not None
                        else seek_offset(pdir, self.offset)
                    )
            except ValueError as exc:
                raise BadOption(str(exc), "--time") from None
            except OSError as exc:
                self.outcome |= Outcome.UNREADABLE
                yield {
                    "type": "failure",
                    "message": f"{exc.filename or pdir}: {exc.strerror or exc}",
                }
                continue
            for w in res.warnings:
                yield {"type": "notice", "message": w}
            for problem in res.problems:  # worked around (the answer stands): invalid data
                self.outcome |= Outcome.INVALID_DATA
                yield {"type": "failure", "message": str(problem)}
            if res.error is not None:
                self.outcome |= Outcome.INVALID_DATA
                yield {"type": "failure", "message": f"{pdir}: {res.error}"}
            ev = Event(res.to_event(), about=pdir)
            if self.fill_latest and ev["offset"] is None and res.error is None:
                latest = seek_time07 if t.kafka07 else seek_time
                ev["offset"] = lso if lso is not None else latest(pdir, LATEST).offset
            if t.kafka07 and self.target is not None and self.target >= 0:
                ev["time_basis"] = "segment_mtime"  # 0.7: no timestamps, file mtimes only
            if self.several:
                ev["log_dir"] = str(t.log_dir)
            yield ev

    def _lso(self, pdir) -> tuple[int | None, object]:
        """The partition's last stable offset (None: earliest needs none) and where the replay
        stopped (a CorruptionError: Kafka's recovery would truncate there), or None."""
        from kseg.storage.txn_replay import replay_transactions

        if self.target == EARLIEST:
            return None, None  # earliest is the same under both isolation levels
        replay = replay_transactions(pdir)
        return replay.last_stable_offset, replay.error

    def reset_events(self) -> Iterator[dict]:
        """``reset`` events (topic, partition, offset), one per topic-partition however many
        replicas were read (see kseg.seek.seek.reset_rows), and the messages on the way. Internal
        topics only when --topic selects them explicitly (kseg.seek.reset_csv)."""
        from kseg.seek.reset_csv import for_reset_file

        yield from for_reset_file(self._reset_events(), self.topic)

    def _reset_events(self) -> Iterator[dict]:
        said: list[dict] = []

        def answers():
            for ev in self.events():
                if ev["type"] in ("failure", "notice"):
                    said.append(ev)
                else:
                    yield ev, ev.about

        def warn(message: str) -> None:
            said.append({"type": "notice", "message": message})

        for topic, partition, offset in reset_rows(answers(), warn):
            yield from said
            said.clear()
            yield {"type": "reset", "topic": topic, "partition": partition, "offset": offset}
        yield from said
