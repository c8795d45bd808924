"""`kseg offsets` as a library call: what a consumer group had committed, offline, from
`__consumer_offsets` under the given roots (kseg.offsets.replay), as of a time
(kseg.offsets.as_of), with the offsets the coordinator would have expired flagged
(kseg.offsets.expiry); events out, what was found accumulated in ``outcome``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kseg.offsets.as_of import counts_at
from kseg.offsets.expiry import DEFAULT_RETENTION_MS, expiry_time, mark_expired
from kseg.offsets.groups import Group
from kseg.offsets.placement import (
    TOPIC,
    best_replica,
    check_one_cluster,
    coordinator_partition,
    offsets_replicas,
    partition_count,
)
from kseg.offsets.replay import Replay, replay_batch
from kseg.offsets.share_state import share_offsets
from kseg.offsets.walk import CoordinatorWalk
from kseg.outcome import Outcome
from kseg.storage import files as F
from kseg.storage.tree import Selection


class OffsetsRun(CoordinatorWalk):
    """``kseg offsets``: one group's committed offsets at ``at`` (``group``), or every group
    (``list_groups``). Events: ``group``, ``offset``, messages; what was found in ``outcome``."""

    def __init__(
        self,
        sel: Selection,
        *,
        group: str | None = None,
        at: int | None = None,
        now: int | None = None,
        retention_ms: int = DEFAULT_RETENTION_MS,
        lag: bool = False,
    ) -> None:
        self.sel = sel
        self.group_id = group
        self.at = at
        self.now = now  # None: expiry is judged at the end of the data (see expiry_time)
        self.retention_ms = retention_ms
        self.lag = lag
        self.outcome = Outcome.OK
        self.groups: dict[str, Group] = {}
        self.data_end = -1  # the latest record time in the partitions read
        # when expiry was judged, and why then (set by events())
        self.expiry_at: int | None = None
        self.expiry_basis = ""

    def expiry_time(self) -> tuple[int, str]:
        """When the coordinator's retention check is judged, and why then (kseg.offsets.expiry)."""
        return expiry_time(self.at, self.now, self.data_end)

    # the __consumer_offsets partitions to read, and what to say about the choice
    def plan(self) -> tuple[list[Path], list[str]]:
        from kseg.storage.tree import NOTHING_FOUND, InputError

        replicas = offsets_replicas(self.sel)
        roots = ", ".join(str(r) for r in self.sel.log_dirs) or "the input"
        if not replicas:
            raise InputError(
                NOTHING_FOUND, roots, f"no {TOPIC} partition directory found: nothing to replay"
            )
        check_one_cluster(replicas, roots)
        notes = []
        wanted = sorted(replicas)
        if self.group_id is not None:
            pc = partition_count(self.sel)
            if pc.count is not None:
                p = coordinator_partition(self.group_id, pc.count)
                notes.append(
                    f"group {self.group_id!r} maps to {TOPIC}-{p} "
                    f"({pc.count} partitions, from {pc.source})"
                )
                if p not in replicas:
                    raise InputError(
                        NOTHING_FOUND,
                        roots,
                        f"group {self.group_id!r} maps to {TOPIC}-{p} ({pc.count} partitions, "
                        f"from {pc.source}), which is not under the given roots; give the root "
                        "of a broker holding it",
                    )
                wanted = [p]
            else:
                notes.append(
                    f"partition count of {TOPIC} unknown ({pc.source}): reading every "
                    f"{TOPIC} partition present ({len(replicas)})"
                )
        dirs = []
        for p in wanted:
            best, note = best_replica(replicas[p])
            dirs.append(best)
            if note:
                notes.append(note)
        return dirs, notes

    def events(self) -> Iterator[dict]:
        dirs, notes = self.plan()
        for n in notes:
            yield {"type": "notice", "message": n}
        pending_parts: dict[str, set[tuple[str, int]]] = {}
        for pdir in dirs:
            # a listing shows one row per group: each group's summary is all it keeps
            replay = Replay(self.at, self.group_id, summary=self.group_id is None)
            yield from self._replay(pdir, replay)
            for gid, g in replay.groups.items():
                g.coordinator = pdir.name
                if gid in self.groups and self.groups[gid].offsets:
                    # the same group in two partitions: only after a partition count change
                    yield {
                        "type": "notice",
                        "message": f"group {gid!r} has records in {self.groups[gid].coordinator} "
                        f"and {pdir.name} (was the partition count of {TOPIC} changed?); "
                        f"showing {pdir.name}'s",
                    }
                self.groups[gid] = g
            for pend in replay.pending.values() if self.group_id is not None else ():
                for gid, topic, part in pend:
                    pending_parts.setdefault(gid, set()).add((topic, part))
            self.data_end = max(self.data_end, replay.last_time)
            del replay  # its groups are in self.groups; the rest (pending commits) goes
        at, self.expiry_basis = self.expiry_time()
        self.expiry_at = at
        if self.group_id is None:  # a listing shows no offset: none is judged
            if not self.groups:
                read = ", ".join(d.name for d in dirs)
                yield {"type": "notice", "message": f"no group has a record in {read}"}
            for g in sorted(self.groups.values(), key=lambda g: g.group):
                yield g.event()
            return
        g = self.groups.get(self.group_id)
        if g is not None:
            mark_expired(g, at, self.retention_ms, pending_parts.get(self.group_id, set()))
        if g is None:
            from kseg.storage.tree import NO_MATCH, InputError

            what = ", ".join(str(d) for d in dirs)
            from kseg.format.timestamps import with_iso

            when = f" at or before {with_iso(self.at)}" if self.at is not None else ""
            raise InputError(NO_MATCH, what, f"no record of group {self.group_id!r}{when}")
        shares: list[dict] = []
        if g.group_type == "share":
            shares = yield from share_offsets(g, self.sel, self._records)
        if (pend := pending_parts.get(self.group_id)) is not None:
            yield {
                "type": "notice",
                "message": f"group {self.group_id!r}: transactional offset commits still "
                f"pending (no COMMIT/ABORT marker yet) for {len(pend)} partitions, not shown",
            }
        yield g.event()
        ends: dict[tuple[str, int], int] = {}
        if self.lag:
            ends = yield from self._log_ends(g)
        for key in sorted(g.offsets):
            ev = g.offsets[key].event(g.group)
            if self.lag:
                end = ends.get(key)
                ev["log_end_offset"] = end
                ev["lag"] = None if end is None else end - ev["offset"]
            yield ev
        yield from shares

    def reset_events(self) -> Iterator[dict]:
        """``reset`` rows (topic, partition, offset) for kafka-consumer-groups --reset-offsets
        --from-file: the group's committed offsets, without those the coordinator would have
        expired and those of internal topics (kseg.seek.reset_csv: offsets has no --topic to select
        them), each said on stderr. A reset file never comes out empty with exit 0: when no row
        is left (every offset expired, or the group holds none, or only internal topics') one
        line says why and the status gets 16 (the question as asked, its time and retention,
        selects nothing to reset to)."""
        from kseg.format.timestamps import with_iso
        from kseg.seek.reset_csv import for_reset_file

        seen: dict = {"offsets": 0, "left_out": [], "group": None}
        rows = 0
        for ev in for_reset_file(self._reset_rows(seen), None, takes_topic=False):
            rows += ev["type"] == "reset"
            yield ev
        left_out, offsets, group = seen["left_out"], seen["offsets"], seen["group"]
        if rows:
            for ev in left_out:
                yield {
                    "type": "notice",
                    "message": f"{ev['topic']}-{ev['partition']}: offset {ev['offset']} left out "
                    f"of the reset file: expired ({ev['expired_reason']})",
                }
            return
        self.outcome |= Outcome.USAGE
        gid = self.group_id
        if left_out and len(left_out) == offsets:
            why = sorted({ev["expired_reason"] for ev in left_out})
            message = (
                f"group {gid!r}: no reset file: every committed offset ({offsets}) had expired "
                f"({'; '.join(why)}) as of {self.expiry_basis} {with_iso(self.expiry_at)}; give "
                "--at before they expired, or the cluster's --retention"
            )
        else:
            what = "none is left"
            if offsets:
                what = "only internal topics' offsets are left, and no reset file names those"
            elif group is not None and group["group_type"] == "share":
                what = "a share group commits none"
            elif group is not None and group["deleted"]:
                what = "the group was deleted"
            message = f"group {gid!r}: no reset file: no committed offset ({what})"
        yield {"type": "failure", "message": message}

    def _reset_rows(self, seen: dict) -> Iterator[dict]:
        """The group's unexpired offsets as ``reset`` rows; counts what it saw into ``seen``."""
        for ev in self.events():
            if ev["type"] == "share_offset":
                yield {"type": "notice", "message": f"{ev['topic']}-{ev['partition']}: a share "
                       "group's share-partition start offset is no consumer offset: not in the "
                       "reset file"}  # fmt: skip
                continue
            if ev["type"] == "group":
                seen["group"] = ev
            if ev["type"] != "offset":
                if ev["type"] in ("failure", "notice"):
                    yield ev
                continue
            seen["offsets"] += 1
            if ev["expired"]:
                seen["left_out"].append(ev)
                continue
            yield {"type": "reset", "topic": ev["topic"], "partition": ev["partition"],
                   "offset": ev["offset"]}  # fmt: skip

    def _replay(self, pdir: Path, replay: Replay) -> Iterator[dict]:
        from kseg.format.coordinator import consumer_offsets

        yield from self._walk(
            pdir,
            lambda batch, log: replay_batch(replay, batch, log, consumer_offsets, self._decoded),
        )

    def _records(self, pdir: Path, decode, group: str | None = None) -> Iterator[dict]:
        """Every decoded record of ``pdir`` at or before ``at`` (only ``group``'s, by its
        ``group_id``, when given), as (record, producer id, (file, batch base offset, offset),
        timestamp); problems are yielded as failures and the list is the generator's return
        value."""
        got: list[tuple] = []

        def each(batch, log: Path) -> Iterator[dict]:
            if getattr(batch, "is_control", False):
                return
            for rec in batch.records():
                if not counts_at(rec.timestamp, self.at):
                    continue
                d = yield from self._decoded(decode, rec, batch, log)
                if d is not None and (group is None or d.get("group_id") == group):
                    where = (str(log), batch.base_offset, rec.offset)
                    got.append((d, batch.producer_id, where, rec.timestamp))

        yield from self._walk(pdir, each)
        return got

    def _log_ends(self, g: Group) -> Iterator[dict]:
        """Log end offset at ``at`` of each topic-partition the group committed, from the data
        dir's replicas (greatest answer across replicas)."""
        from kseg.seek.seek import LATEST, seek_time

        found: dict[tuple[str, int], list[Path]] = {}
        for t in self.sel.targets():
            name = F.parse_partition_dir(t.partition_dir.name)
            if name is not None and name.state is None:
                found.setdefault((name.topic, name.partition), []).append(t.partition_dir)
        out: dict[tuple[str, int], int] = {}
        for key in g.offsets:
            best = None
            for pdir in found.get(key, []):
                res = seek_time(pdir, LATEST) if self.at is None else seek_time(pdir, self.at + 1)
                if res.error is None and res.offset is None:
                    res = seek_time(pdir, LATEST)  # nothing after T: the log end
                if res.error is not None:
                    self.outcome |= Outcome.INVALID_DATA
                    yield {"type": "failure", "message": f"{pdir}: log end: {res.error}"}
                    continue
                best = res.offset if best is None else max(best, res.offset)
            if best is not None:
                out[key] = best
        return out
