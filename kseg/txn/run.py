"""`kseg txn` as a library call: per partition, the transactions open in its log and the last
stable offset they hold read_committed consumers at (kseg.storage.txn_replay), joined with the
coordinator's state from `__transaction_state` under the same roots (kseg.txn.coordinator), and
each open transaction judged as `kafka-transactions.sh find-hanging` judges it
(kseg.txn.hanging). Events out (JSON shapes in README "kseg txn"); what was found in
``outcome``: INVALID_DATA when a transaction hangs or data is damaged.

Which partitions: every live partition selected, an internal topic's (`__consumer_offsets`,
`__transaction_state`, ...) only when its log holds transactional batches (`__consumer_offsets`
does: TxnOffsetCommit). find-hanging searches internal topics too (listTopics with
listInternal): one without transactions has no candidate, so only its row is left out.
``internal``: asked for (by --topic, or its partition dir given by path): shown all the same.

``at``: the partition as it stood at T, its offsets below seek's answer for T+1 (the first
offset written after T), and the coordinator's records written at or before T. Time answers (a
transaction's age, the max transaction timeout) are judged at ``at``, else ``now``, else the end
of the data (the latest batch time read: a copy is judged as of when it was taken), as `kseg
offsets` judges expiry.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from kseg.events import Event
from kseg.format.timestamps import with_iso
from kseg.outcome import Outcome
from kseg.storage import files as F
from kseg.storage import jobs
from kseg.storage.tree import Selection
from kseg.txn.coordinator import Coordinator
from kseg.txn.hanging import DEFAULT_MAX_TIMEOUT_MINUTES, HANGING, UNJUDGED, abort_command, judge

DEFAULT_MAX_TIMEOUT_MS = DEFAULT_MAX_TIMEOUT_MINUTES * 60_000


def judged_time(at: int | None, now: int | None, data_end: int) -> tuple[int, str]:
    """When time answers are judged, and why then (kseg.offsets.expiry's rule): ``at``; else
    ``now``; else the end of the data; the clock only when no batch carries a time."""
    if at is not None:
        return at, "--at"
    if now is not None:
        return now, "--now"
    if data_end >= 0:
        return data_end, "the end of the data (the latest batch time read)"
    return int(time.time() * 1000), "the clock (no batch read carries a time)"


class _Part(NamedTuple):
    """What is kept of one partition's replay until the time of judgement is known."""

    pdir: Path
    topic: str | None
    partition: int | None
    replay: object  # kseg.storage.txn_replay.TxnReplay, producers trimmed unless shown


class TxnRun:
    """``kseg txn``: see the module. ``coordinator_sel``: where `__transaction_state` is looked
    for (the roots unfiltered by --topic; default ``sel``)."""

    def __init__(
        self,
        sel: Selection,
        *,
        at: int | None = None,
        now: int | None = None,
        max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
        producers: bool = False,
        coordinator_sel: Selection | None = None,
        bootstrap: str | None = None,
        internal: bool = False,
        jobs: int | None = 1,
    ) -> None:
        self.targets = sel.required_targets("replay transactions in")
        self.several = sel.several_log_dirs
        self.at, self.now = at, now
        self.max_timeout_ms = max_timeout_ms
        self.producers = producers
        self.coordinator = Coordinator(coordinator_sel or sel, at)
        self.bootstrap = bootstrap
        self.internal = internal
        self.jobs = jobs  # worker processes replaying partitions (None: every core)
        self.outcome = Outcome.OK
        self.data_end = -1
        self.judged_at: int | None = None
        self.judged_by = ""
        self.rests_on_caveat = False

    def events(self) -> Iterator[dict]:
        yield from self.coordinator.replay()
        self.outcome |= self.coordinator.outcome
        self.data_end = self.coordinator.last_time
        parts: list[_Part] = []
        walks = jobs.in_order(self._replay, self.targets, self.jobs, self)
        try:
            for walk in walks:  # the partitions replayed in workers; judged here, once all are
                part = yield from walk
                if part is not None:
                    parts.append(part)
        finally:
            walks.close()
        self.judged_at, self.judged_by = judged_time(self.at, self.now, self.data_end)
        by_producer = self.coordinator.by_producer() if self.coordinator.present else None
        totals = dict.fromkeys(("open", "hanging", "unjudged", "committed", "aborted", "empty"), 0)
        younger = 0  # open transactions the clock would judge older than the timeout
        clock = int(time.time() * 1000)
        for p in parts:
            evs = list(self._partition_events(p, by_producer))
            head = evs[0]
            for k in totals:
                totals[k] += head[k]
            if self.at is None and self.now is None:
                younger += sum(
                    1
                    for ev in evs
                    if ev["type"] == "open_transaction"
                    and not ev["candidate"]
                    and clock - ev["last_timestamp"] > self.max_timeout_ms
                )
            yield from evs
        if totals["hanging"]:
            self.outcome |= Outcome.INVALID_DATA
        if self.coordinator.caveat and self.rests_on_caveat:
            yield {"type": "notice", "message": self.coordinator.caveat}
        if younger:
            yield {"type": "notice", "message": f"{younger} open transaction"
                   f"{'s' if younger != 1 else ''} idle less than the max transaction timeout at "
                   f"{self.judged_by} would be past it at the clock: give --now now to judge "
                   "against the clock"}  # fmt: skip
        yield {
            "type": "summary",
            "partitions": len(parts),
            **totals,
            "judged_at": self.judged_at,
            "judged_by": self.judged_by,
            "max_transaction_timeout_ms": self.max_timeout_ms,
        }

    # kseg.storage.jobs.Shared: what a worker's partition replay adds to the run's
    def fork_reset(self) -> None:
        self.outcome = Outcome.OK
        self.data_end = -1

    def fork_state(self) -> tuple[Outcome, int]:
        return self.outcome, self.data_end

    def fork_absorb(self, state: tuple[Outcome, int]) -> None:
        self.outcome |= state[0]
        self.data_end = max(self.data_end, state[1])

    def _replay(self, t) -> Iterator[dict]:
        """One partition's replay (as of ``at``), kept compact; None when it is not reported
        (in this process or a worker: kseg.storage.jobs)."""
        from kseg.storage.txn_replay import replay_transactions

        pdir = t.partition_dir
        name = F.parse_partition_dir(pdir.name)
        if name is not None and name.state is not None:
            return None  # a dir Kafka deletes or moves (-delete, -future, -stray): no live log
        if t.kafka07:  # Kafka 0.7 knew no transactions
            yield {"type": "notice", "message": f"{pdir}: a Kafka 0.7 log: no transactions"}
            return None
        upto = None
        try:
            if self.at is not None:
                from kseg.seek.seek import seek_time

                res = seek_time(pdir, self.at + 1)
                if res.error is not None:
                    self.outcome |= Outcome.INVALID_DATA
                    yield {"type": "failure", "message": f"{pdir}: the offset at --at: "
                           f"{res.error}"}  # fmt: skip
                    return None
                upto = res.offset  # None: nothing written after T, the whole log
            replay = replay_transactions(pdir, upto=upto)
        except OSError as exc:
            self.outcome |= Outcome.UNREADABLE
            yield {"type": "failure", "message": f"{exc.filename or pdir}: {exc.strerror or exc}"}
            return None
        if replay.seed_error is not None:  # verify: a warning; Kafka rebuilds from the log
            yield {"type": "notice", "message": f"{replay.seed_error}; the replay starts from "
                   "the log alone, as Kafka's recovery does"}  # fmt: skip
        if replay.error is not None:
            self.outcome |= Outcome.INVALID_DATA
            yield {"type": "failure", "message": f"{replay.error}; transactions after it are not "
                   "replayed (Kafka's recovery would truncate there)"}  # fmt: skip
        if self.at is not None and replay.log_end_offset <= replay.log_start_offset:
            # nothing of the log is from T or before: the producer state it starts with (its
            # snapshot) holds writes made after T, so the partition at T is not in the data
            later = max((s.last_timestamp for s in replay.producers), default=-1)
            if later > self.at:
                yield {"type": "notice", "message": f"{pdir}: --at {with_iso(self.at)} is "
                       f"before the producer state at its log start offset "
                       f"{replay.log_start_offset} (a write at {with_iso(later)}): the partition as it stood then is not in the data "
                       "(its older segments are deleted); left out"}  # fmt: skip
                return None
        self.data_end = max(self.data_end, replay.data_end_time)
        topic = name.topic if name is not None else None
        closed = replay.committed + replay.aborted + replay.empty
        quiet = not replay.open and not closed
        if topic is not None and topic.startswith("__") and quiet and not self.internal:
            return None  # an internal topic without transactions, not asked for
        if not self.producers:  # keep only the open transactions' producers
            pids = {o.producer_id for o in replay.open}
            replay = replay._replace(
                producers=tuple(s for s in replay.producers if s.producer_id in pids),
                aborted_ranges=None,
            )
        else:
            replay = replay._replace(aborted_ranges=None)
        return _Part(pdir, topic, name.partition if name is not None else None, replay)

    def _partition_events(self, p: _Part, by_producer) -> Iterator[dict]:
        r = p.replay
        base = {"topic": p.topic, "partition": p.partition}
        if self.several:
            base["log_dir"] = str(p.pdir.parent)
        states = {s.producer_id: s for s in r.producers}
        opens = []
        hanging = unjudged = 0
        for o in r.open:
            st = states.get(o.producer_id)
            last_ts = st.last_timestamp if st is not None else o.last_timestamp
            coord_epoch = st.coordinator_epoch if st is not None else -1
            v = judge(
                p.topic or "",
                p.partition if p.partition is not None else -1,
                o.producer_id,
                last_ts,
                self.judged_at,
                self.max_timeout_ms,
                by_producer,
                self.coordinator.complete,
            )
            hanging += v.status == HANGING
            # a verdict resting on what the coordinator state lacks (kseg.txn.coordinator)
            self.rests_on_caveat |= v.status == UNJUDGED or v.rule == "no_transactional_id"
            self.rests_on_caveat |= by_producer is None
            unjudged += v.status == UNJUDGED
            cmd = None
            if v.status == HANGING and p.topic is not None and p.partition is not None:
                cmd = abort_command(p.topic, p.partition, o.producer_id, o.producer_epoch,
                                    coord_epoch, self.bootstrap)  # fmt: skip
            m = v.meta
            opens.append(
                {
                    "type": "open_transaction",
                    **base,
                    "producer_id": o.producer_id,
                    "producer_epoch": o.producer_epoch,
                    "coordinator_epoch": coord_epoch,
                    "first_offset": o.first_offset,
                    "first_timestamp": o.first_timestamp,
                    "last_offset": o.last_offset,
                    "last_timestamp": last_ts,
                    "records": o.records,
                    "bytes": o.bytes,
                    "file": o.file or None,
                    "age_ms": self.judged_at - o.first_timestamp
                    if o.first_timestamp >= 0
                    else None,
                    "idle_ms": self.judged_at - last_ts,
                    "candidate": v.candidate,
                    "transactional_id": m.transactional_id if m else None,
                    "coordinator_state": m.state if m else None,
                    "timeout_ms": m.timeout_ms if m else None,
                    "status": v.status,
                    "why": v.why,
                    "hanging": v.status == HANGING,
                    "hanging_rule": v.rule,
                    "abort_command": cmd,
                }
            )
        holder = r.holding()
        head = {
            "type": "partition",
            **base,
            "log_start_offset": r.log_start_offset,
            "log_end_offset": r.log_end_offset,
            "last_stable_offset": r.last_stable_offset,
            "held_since": holder.first_timestamp
            if holder and holder.first_timestamp >= 0
            else None,
            "held_by": holder.producer_id if holder else None,
            "open": len(r.open),
            "hanging": hanging,
            "unjudged": unjudged,
            "committed": r.committed,
            "aborted": r.aborted,
            "empty": r.empty,
        }
        yield Event(head, about=p.pdir)
        for ev in opens:
            yield Event(ev, about=p.pdir)
        if self.producers:
            for s in r.producers:
                yield Event(
                    {
                        "type": "producer",
                        **base,
                        "producer_id": s.producer_id,
                        "producer_epoch": s.producer_epoch,
                        "last_sequence": s.last_sequence,
                        "last_timestamp": s.last_timestamp,
                        "coordinator_epoch": s.coordinator_epoch,
                        "current_txn_start_offset": s.current_txn_start_offset,
                    },
                    about=p.pdir,
                )
