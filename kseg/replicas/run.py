"""`kseg replicas` as a library call: the partitions that have replicas in two or more of the
roots given, each replica loaded as Kafka loads it (kseg.replicas.model), the leader chosen
(kseg.replicas.leader), and for every other replica where its batches first differ from the
leader's, what it truncates to when it rejoins (kseg.replicas.rejoin: Kafka's epoch rule) and
the records that only it holds, which the truncation loses (kseg.replicas.compare). With
``export_lost``, those records are written out (kseg.replicas.export). Events out (JSON shapes
in README "kseg replicas"); ``outcome``: INVALID_DATA when a replica diverged or is damaged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kseg.outcome import BadOption, Outcome
from kseg.replicas.compare import Comparison, compare
from kseg.replicas.leader import Choice, choose
from kseg.replicas.model import Replica, load_replica
from kseg.replicas.rejoin import Rejoin, rejoin
from kseg.storage import files as F
from kseg.storage import jobs
from kseg.storage.tree import FILE, Selection, Target

if TYPE_CHECKING:  # the export's modules load only when it runs
    from kseg.replicas.export import RecordFiles

METADATA_TOPIC = (
    "__cluster_metadata"  # replicated by KRaft's own protocol, not by followers' fetches
)

NO_START = "no_start"  # a Rejoin's rule for a replica Kafka would not load
LEADER, IN_SYNC, BEHIND, DIVERGED, DAMAGED = "leader", "in_sync", "behind", "diverged", "damaged"
CONSISTENT = "consistent"


def group_replicas(
    targets: list[Target],
) -> tuple[dict[tuple[str, int], list[Target]], int, list[Path]]:
    """Live partitions by (topic, partition), each with its replicas in the order given; how
    many partitions have a single replica (nothing to compare them with); and the partition
    dirs given more than once (a root twice, or a root and its own partition dir: one replica,
    compared once, never with itself)."""
    groups: dict[tuple[str, int], list[Target]] = {}
    seen: set[Path] = set()
    again: list[Path] = []
    for t in targets:
        name = F.parse_partition_dir(t.partition_dir.name)
        if name is None or name.state is not None or t.kafka07 or name.topic == METADATA_TOPIC:
            continue
        real = t.partition_dir.resolve()
        if real in seen:
            again.append(t.partition_dir)
            continue
        seen.add(real)
        groups.setdefault((name.topic, name.partition), []).append(t)
    single = sum(1 for g in groups.values() if len(g) < 2)
    return {k: g for k, g in groups.items() if len(g) >= 2}, single, again


def rejoins(lead: Replica, replicas: list[Replica]) -> Iterator[tuple[Replica, Rejoin]]:
    """Each follower of ``lead`` with what it truncates to when it rejoins ``lead`` (as Kafka
    makes it leader: kseg.replicas.rejoin.elected); both `kseg replicas` and its Spark run."""
    for r in replicas:
        if r is lead:
            continue
        if not r.starts:  # Kafka would not load it: no rejoin to predict (its damage says why)
            yield r, Rejoin(r.log_end_offset, False, (), NO_START)
            continue
        yield r, rejoin(lead.epochs, lead.log_start_offset, lead.log_end_offset, r.epochs,
                        r.log_end_offset, r.high_watermark)  # fmt: skip


def status_of(r: Replica, leader: Replica, rj: Rejoin, cmp: Comparison) -> str:
    if r.damage is not None or not r.starts:
        return DAMAGED
    diverged_below = cmp.divergence is not None and cmp.divergence.offset < rj.truncate_to
    if cmp.loss.records or diverged_below:
        return DIVERGED
    if rj.fully or r.log_end_offset < leader.log_end_offset:
        return BEHIND
    return IN_SYNC


class ReplicasRun:
    """``kseg replicas``: see the module."""

    def __init__(
        self,
        sel: Selection,
        *,
        leader: Path | None = None,
        export_lost: Path | None = None,
        record_files: RecordFiles | None = None,
        jobs: int | None = 1,
    ) -> None:
        """``record_files``: the writers of the exports' JSON Lines and Parquet (the caller's:
        kseg.render.lost_records.record_files()); without them only the partition dirs.
        ``jobs``: worker processes comparing partitions (None: every core; kseg.storage.jobs);
        the exports are written by this process, after each partition's verdict."""
        # (kseg.spark.replicas hands partition dirs only, no items)
        files = [it.path for it in getattr(sel, "items", ()) if it.kind == FILE]
        if files:
            raise BadOption(
                f"{files[0]}: a segment file; kseg replicas compares whole partitions: give the "
                "broker roots, a directory of them, or partition directories",
                "PATH",
            )
        targets = sel.required_targets("compare")
        self.groups, self.single, self.again = group_replicas(targets)
        if not self.groups:
            raise BadOption(
                "no partition has replicas in two or more of the roots given: give a directory "
                "of broker roots, or several roots",
                "PATH",
            )
        self._check_one_cluster()
        if leader is not None:
            roots = {t.log_dir.resolve() for g in self.groups.values() for t in g}
            if leader.resolve() not in roots:
                raise BadOption(f"{leader} is none of the roots holding replicas", "--leader")
        if export_lost is not None:
            self._check_export(export_lost)
        self.leader = leader
        self.export_lost = export_lost
        self.record_files = record_files
        self.workers = jobs  # kseg.storage.jobs: None, every core
        self.outcome = Outcome.OK
        self._metadata: dict = {}  # the KRaft metadata replayed once per run (leader.choose)

    def _check_export(self, dest: Path) -> None:
        """--export-lost DIR refused before anything is read (BadOption: usage): a replica's
        DIR/<root name> that already holds its export or is a symlink (kseg.replicas.export
        .check_dest), or two roots of one name (their exports would meet in one directory)."""
        from kseg.replicas.export import check_dest

        names: dict[str, Path] = {}
        roots = {t.log_dir.resolve() for g in self.groups.values() for t in g}
        # the directory holding the roots, when they sit side by side: an export there would be
        # taken for one more replica by the next `kseg replicas` of that directory
        parents = {r.parent for r in roots}
        inside = roots | (parents if len(parents) == 1 and len(roots) > 1 else set())
        real = dest.resolve()
        for d in sorted(inside):
            if real == d or d in real.parents:
                raise BadOption(
                    f"{dest} is inside {d}, which holds the replicas read: a later "
                    "`kseg replicas` there would take the export for one more replica; give a "
                    "DIR outside it",
                    "--export-lost",
                )
        for (topic, partition), targets in sorted(self.groups.items()):
            for t in targets:
                other = names.setdefault(t.log_dir.name, t.log_dir)
                if other.resolve() != t.log_dir.resolve():
                    raise BadOption(
                        f"{other} and {t.log_dir}: two roots named {t.log_dir.name}; "
                        "--export-lost writes each root's records under DIR/<root name>: give "
                        "the roots under distinct names (e.g. symlinks broker-1 -> "
                        f"{t.log_dir}, side by side)",
                        "--export-lost",
                    )
                check_dest(dest / t.log_dir.name, topic, partition,
                           src_partition_dir=t.partition_dir)  # fmt: skip

    def _check_one_cluster(self) -> None:
        from kseg.offsets.placement import cluster_ids

        roots = {t.log_dir for g in self.groups.values() for t in g}
        ids = cluster_ids(roots)
        if len(set(ids.values())) > 1:
            named = ", ".join(f"{r} ({c})" for r, c in sorted(ids.items()))
            raise BadOption(f"the roots belong to different clusters: {named}", "PATH")

    def events(self) -> Iterator[dict]:
        totals = dict.fromkeys((CONSISTENT, DIVERGED, DAMAGED, "lost_records", "lost_bytes"), 0)
        if self.again:
            n = len(self.again)
            yield {"type": "notice", "message": f"{self.again[0]}"
                   f"{'' if n == 1 else f' and {n - 1} more partition dirs'} given twice: "
                   "each replica compared once"}  # fmt: skip
        if self.single:
            yield {"type": "notice", "message": f"{self.single} partition"
                   f"{' has' if self.single == 1 else 's have'} a replica in one root only: "
                   "nothing to compare"}  # fmt: skip
        groups = sorted(self.groups.items())
        n = jobs.workers_for(self.workers, groups)  # sized once, by stat
        if n > 1 and self.leader is None:
            self._replay_metadata(groups)  # before the workers fork: each inherits the replays
        walks = jobs.in_order(self._one, groups, n, self)
        try:
            for _, walk in zip(groups, walks, strict=True):
                found = yield from walk
                if found is None:
                    continue
                evs, exports = found
                head = evs[0]
                totals[head["status"]] += 1
                totals["lost_records"] += head["lost_records"]
                totals["lost_bytes"] += head["lost_bytes"]
                yield from evs
                for export in exports:
                    yield self._export(*export)
        finally:
            walks.close()  # the workers stopped and reaped, also on an error
        if totals[DIVERGED] or totals[DAMAGED]:
            self.outcome |= Outcome.INVALID_DATA
        yield {"type": "summary", "partitions": totals[CONSISTENT] + totals[DIVERGED]
               + totals[DAMAGED], **totals}  # fmt: skip

    def _one(self, group: tuple[tuple[str, int], list[Target]]):
        """One partition's replicas compared (in this process or a worker: kseg.storage.jobs)."""
        (topic, partition), targets = group
        return (yield from self._partition(topic, partition, targets))

    def _replay_metadata(self, groups) -> None:
        """The KRaft metadata of every set of roots the partitions' leaders are chosen from,
        replayed into the run's memo (kseg.replicas.leader.replay_metadata)."""
        from kseg.replicas.leader import replay_metadata

        for key in dict.fromkeys(tuple(t.log_dir for t in targets) for _, targets in groups):
            replay_metadata(key, self._metadata)

    # kseg.storage.jobs.Shared: what a worker's partition adds to the run's outcome
    def fork_reset(self) -> None:
        self.outcome = Outcome.OK

    def fork_state(self) -> Outcome:
        return self.outcome

    def fork_absorb(self, state: Outcome) -> None:
        self.outcome |= state

    # what kseg.spark.replicas answers from its Spark jobs instead (the same functions' results)
    def _load(self, t: Target, topic: str, partition: int) -> Replica:
        return load_replica(t, topic, partition)

    def _choose(self, replicas: list[Replica], topic: str, partition: int) -> Choice:
        return choose(replicas, topic, partition, self.leader, self._metadata)

    def _compare(self, topic: str, partition: int, lead: Replica, r: Replica, rj: Rejoin):
        return compare(lead, r, rj.truncate_to, rj.fully)

    def _partition(self, topic: str, partition: int, targets: list[Target]):
        replicas: list[Replica] = []
        for t in targets:
            try:
                replicas.append(self._load(t, topic, partition))
            except OSError as exc:
                self.outcome |= Outcome.UNREADABLE
                yield {"type": "failure", "message": f"{exc.filename or t.partition_dir}: "
                       f"{exc.strerror or exc}"}  # fmt: skip
        if len(replicas) < 2:
            return None
        for r in replicas:
            if r.unreadable is not None:
                self.outcome |= Outcome.UNREADABLE
                yield {"type": "failure", "message": r.unreadable}
            if r.epoch_note is not None:
                yield {"type": "notice", "message": f"{r.epoch_note} (Kafka's replication goes "
                       "by leader-epoch-checkpoint)"}  # fmt: skip
        choice = self._choose(replicas, topic, partition)
        lead = replicas[choice.index]
        rows = [_replica_event(topic, partition, lead, LEADER, None, None, LEADER)]
        first_div: int | None = None
        lost_records = lost_bytes = 0
        worst = CONSISTENT
        exports = []
        if lead.damage is not None or not lead.starts:
            rows[0]["status"] = DAMAGED
            worst = DAMAGED
        for r, rj in rejoins(lead, replicas):
            cmp = self._compare(topic, partition, lead, r, rj)
            status = status_of(r, lead, rj, cmp)
            rows.append(_replica_event(topic, partition, r, "follower", rj, cmp, status))
            if cmp.divergence is not None:
                d = cmp.divergence.offset
                first_div = d if first_div is None else min(first_div, d)
            lost_records += cmp.loss.records
            lost_bytes += cmp.loss.bytes
            if status == DAMAGED:
                worst = DAMAGED
            elif status == DIVERGED and worst == CONSISTENT:
                worst = DIVERGED
            if self.export_lost is not None and cmp.loss.records:
                exports.append((r, cmp))
        head = {
            "type": "partition",
            "topic": topic,
            "partition": partition,
            "replicas": len(replicas),
            "leader": str(lead.log_dir),
            "leader_rule": choice.rule,
            "leader_reason": choice.reason,
            "status": worst,
            "first_divergence": first_div,
            "lost_records": lost_records,
            "lost_bytes": lost_bytes,
        }
        # the verdict is shown before the exports run: an export interrupted (or failing) does
        # not take the analysis with it
        return [head, *rows], [(topic, partition, r, cmp) for r, cmp in exports]

    def _export(self, topic: str, partition: int, r: Replica, cmp: Comparison) -> dict:
        from kseg.replicas.export import export_lost

        dest = self.export_lost / r.log_dir.name
        res = export_lost(r.partition_dir, cmp.loss.ranges, dest, topic=topic,
                          partition=partition, files=self.record_files)  # fmt: skip
        return {
            "type": "export",
            "topic": topic,
            "partition": partition,
            "log_dir": str(r.log_dir),
            "dir": str(res.dir),
            "jsonl": None if res.jsonl is None else str(res.jsonl),
            "parquet": None if res.parquet is None else str(res.parquet),
            "records": res.records,
        }


def _replica_event(topic, partition, r: Replica, role, rj: Rejoin | None, cmp, status) -> dict:
    loss = cmp.loss if cmp is not None else None
    lost = loss is not None and loss.records > 0
    div = cmp.divergence if cmp is not None else None
    return {
        "type": "replica",
        "topic": topic,
        "partition": partition,
        "log_dir": str(r.log_dir),
        "node_id": r.node_id,
        "role": role,
        "status": status,
        "log_start_offset": r.log_start_offset,
        "log_end_offset": r.log_end_offset,
        "high_watermark": r.high_watermark,
        "cleaned_to": r.cleaned_to,
        "latest_epoch": r.latest_epoch,
        "last_batch_epoch": r.last_batch_epoch,
        "epochs": [[e.epoch, e.start_offset] for e in r.epochs],
        "divergence": None if div is None else div._asdict(),
        "truncate_to": None if rj is None or rj.rule == NO_START else rj.truncate_to,
        "truncate_fully": False if rj is None else rj.fully,
        "lost_records": loss.records if loss is not None else 0,
        "lost_bytes": loss.bytes if loss is not None else 0,
        "lost_batches": loss.batches if loss is not None else 0,
        "lost_first_offset": loss.first_offset if lost else None,
        "lost_last_offset": loss.last_offset if lost else None,
        "lost_first_timestamp": loss.first_timestamp if lost else None,
        "lost_last_timestamp": loss.last_timestamp if lost else None,
        "damage": r.damage,
    }
