"""`kseg spark replicas`: `kseg replicas` (kseg.replicas.run) over many replicas on Spark, with
the same events and outcome.

- Each replica is loaded as Kafka loads it by kseg.replicas.model.load_replica itself, one Spark
  task per replica: its log end after recovery and its damage are kseg verify's prediction,
  which reads every byte (the recovery's record checks, index rebuilds, what stops Kafka from
  starting): no batch row says it, so the function runs where the bytes are, as `kseg spark
  verify` runs verify's. Only the Replica (a few numbers, its epochs) comes back.
- The leader (kseg.replicas.leader) and each follower's truncation (kseg.replicas.rejoin) are
  worked out on the driver from those, by the library's functions.
- The batches themselves are compared in Spark, from the source's ``batches`` rows (one per
  batch, whole segments per task as the header walk reads them): each follower's batches joined
  with its leader's on the batch's identity (kseg.replicas.compare.same: offsets, partition
  leader epoch, stored CRC, size, both CRCs holding); the lost batches and the first divergence
  of the merged walk (kseg.replicas.compare.compare) come back as one small row per follower.

The walk's first divergence is the first mismatch it meets: a follower batch that matches no
leader batch (at its base offset, or where the comparison starts), or a leader batch the
follower lacks, met when the walk reaches the follower's next batch above it. For logs whose
offsets grow (every log Kafka writes) that is the least of: the least unmatched follower
batch, and the least unmatched leader batch when the follower's next batch above it comes no
later than that follower batch.
"""

from __future__ import annotations

from pathlib import Path

from kseg.replicas.compare import IDENTITY, Comparison, Divergence, Loss, compared_from
from kseg.replicas.leader import Choice, choose
from kseg.replicas.model import Replica, load_replica
from kseg.replicas.rejoin import Rejoin
from kseg.replicas.run import ReplicasRun, rejoins
from kseg.storage.tree import NOTHING_FOUND, InputError, Target

NO_LOSS = Loss(0, 0, 0, None, None, None, None, ())


class _Targets:
    """A Selection's ``required_targets`` over the Spark planner's partition dirs (local paths
    or URIs), in the order of the inputs (each input's as kseg.storage.tree lists them)."""

    def __init__(self, paths: list[str], topic: str | None, partition: int | None) -> None:
        from kseg.spark.planning import Prune, find_partitions
        from kseg.storage.tree import segment_logs
        from kseg.storage.uri import as_path

        prune = Prune(topic=topic, partitions=None if partition is None else frozenset([partition]))
        self.paths = paths
        self.targets: list[Target] = []
        seen = set()
        for p in paths:
            for pdir, *_ in find_partitions([p], prune):
                if pdir not in seen:
                    seen.add(pdir)
                    path = as_path(pdir)
                    self.targets.append(Target(path, segment_logs(path)))

    def required_targets(self, purpose: str) -> list[Target]:
        if not self.targets:
            raise InputError(NOTHING_FOUND, ", ".join(self.paths),
                             f"no Kafka partition directory (<topic>-<n>) found to {purpose}")  # fmt: skip
        return self.targets


def _load(item: tuple[Target, str, int]):
    """On an executor: the replica as Kafka loads it, or the OSError's parts."""
    target, topic, partition = item
    try:
        return load_replica(target, topic, partition)
    except OSError as exc:
        return (exc.errno, exc.strerror, None if exc.filename is None else str(exc.filename),
                str(exc))  # fmt: skip


def _oserror(parts) -> OSError:
    errno, strerror, filename, text = parts
    if strerror:
        return OSError(errno, strerror, filename)
    return OSError(text)


class SparkReplicasRun(ReplicasRun):
    """ReplicasRun whose replicas are loaded and compared by Spark jobs (see the module); the
    events are assembled by ReplicasRun itself."""

    def __init__(
        self,
        spark,
        paths: list[str],
        *,
        leader: Path | None = None,
        topic: str | None = None,
        partition: int | None = None,
    ) -> None:
        super().__init__(_Targets(paths, topic, partition), leader=leader)
        self.spark = spark
        self.paths = paths
        self.topic = topic
        self.partition = partition
        self._loaded: dict[str, object] = {}
        self._choices: dict[tuple[str, int], Choice] = {}
        self._compared: dict[tuple[str, int, str], Comparison] = {}

    def events(self):
        self._prepare()
        yield from super().events()

    # --- the Spark jobs, then ReplicasRun's hooks answered from them ----------------------------
    def _prepare(self) -> None:
        items = [(t, topic, part) for (topic, part), ts in sorted(self.groups.items()) for t in ts]
        sc = self.spark.sparkContext
        loaded = sc.parallelize(items, max(1, len(items))).map(_load).collect()
        self._loaded = {str(t.partition_dir): r for (t, _, _), r in zip(items, loaded, strict=True)}
        pairs = []
        for (topic, part), targets in sorted(self.groups.items()):
            replicas = [r for t in targets if isinstance(r := self._loaded[str(t.partition_dir)],
                                                         Replica)]  # fmt: skip
            if len(replicas) < 2:
                continue
            choice = choose(replicas, topic, part, self.leader, self._metadata)
            self._choices[(topic, part)] = choice
            lead = replicas[choice.index]
            for r, rj in rejoins(lead, replicas):
                pairs.append((topic, part, lead, r, rj))
        self._compared = compare_pairs(self.spark, self.paths, pairs, self.topic, self.partition)

    def _load(self, t: Target, topic: str, partition: int) -> Replica:
        r = self._loaded[str(t.partition_dir)]
        if not isinstance(r, Replica):
            raise _oserror(r)
        return r

    def _choose(self, replicas: list[Replica], topic: str, partition: int) -> Choice:
        return self._choices[(topic, partition)]

    def _compare(self, topic: str, partition: int, lead: Replica, r: Replica, rj: Rejoin):
        return self._compared[(topic, partition, str(r.partition_dir))]


PAIRS_DDL = (
    "pid int, topic string, partition int, fdir string, ldir string, lo long, lend long, "
    "fstart long, fend long, tto long, fully boolean"
)
KEYS = ["pid", *IDENTITY, "ok"]  # a batch's identity (kseg.replicas.compare.same)


def _batches(spark, paths: list[str], topic: str | None, partition: int | None):
    """The batches rows as the header walk sees them (kseg.format.log.walk_headers): a batch
    whose CRC fails is a row (crc_valid false); a legacy message is one record at its own
    offset, epoch -1; one task per segment, so a walk stops where a segment's structure ends
    and goes on with the next segment, as the local walk does."""
    from pyspark.sql import functions as F

    from kseg.spark.jobs import read

    df = read(spark, paths, mode="batches", topic=topic, maxPartitionBytes=1 << 62, badCrc=True,
              partitions=None if partition is None else str(partition))  # fmt: skip
    v2 = F.col("magic") >= 2
    return df.select(
        "topic",
        "partition",
        F.regexp_replace("file", "/[^/]*$", "").alias("pdir"),
        F.when(v2, F.col("base_offset")).otherwise(F.col("last_offset")).alias("base"),
        F.col("last_offset").alias("last"),
        F.when(v2, F.col("partition_leader_epoch")).otherwise(F.lit(-1)).alias("epoch"),
        "crc",
        "size",
        F.col("crc_valid").alias("ok"),
        F.col("max_timestamp").alias("max_ts"),
        F.when(v2, F.col("count")).otherwise(F.lit(1)).cast("long").alias("records"),
    )


def compare_pairs(
    spark, paths: list[str], pairs: list, topic: str | None, partition: int | None
) -> dict[tuple[str, int, str], Comparison]:
    """kseg.replicas.compare.compare for every (topic, partition, leader, follower, rejoin) of
    ``pairs``, in Spark: {(topic, partition, the follower's partition dir): Comparison} (no
    LostRange: those are for --export-lost, a local job; ``truncated`` is not computed: 0)."""
    from pyspark.sql import functions as F

    if not pairs:
        return {}
    rows = [
        (i, topic, part, str(r.partition_dir), str(lead.partition_dir), compared_from(lead, r),
         lead.log_end_offset, r.log_start_offset, r.log_end_offset, rj.truncate_to, rj.fully)
        for i, (topic, part, lead, r, rj) in enumerate(pairs)
    ]  # fmt: skip
    P = F.broadcast(spark.createDataFrame(rows, PAIRS_DDL))
    B = _batches(spark, paths, topic, partition).persist()
    try:
        fol = (
            B.join(P.withColumnRenamed("fdir", "pdir"), ["topic", "partition", "pdir"])
            .where((F.col("last") >= F.col("fstart")) & (F.col("base") < F.col("fend")))
        )  # fmt: skip
        lead = (
            B.join(P.withColumnRenamed("ldir", "pdir"), ["topic", "partition", "pdir"])
            .where((F.col("last") >= F.col("lo")) & (F.col("base") < F.col("lend")))
        )  # fmt: skip
        # an unmatched batch: no batch of the other side is the same (both CRCs holding)
        f_un = fol.join(lead.where("ok").select(KEYS), KEYS, "left_anti")
        l_un = lead.join(fol.where("ok").select(KEYS), KEYS, "left_anti")
        f_max = fol.groupBy("pid").agg(F.max("base").alias("fmax"))
        ts = F.when(F.col("max_ts") >= 0, F.col("max_ts"))
        lost = (
            f_un.where(F.col("fully") | (F.col("last") >= F.col("tto")))
            .groupBy("pid")
            .agg(
                F.sum("records").alias("records"),
                F.sum("size").alias("bytes"),
                F.count("base").alias("batches"),
                F.min("base").alias("first_offset"),
                F.max("last").alias("last_offset"),
                F.min(ts).alias("first_timestamp"),
                F.max(ts).alias("last_timestamp"),
            )
        )
        f_star = (
            f_un.where(F.col("last") >= F.col("lo"))
            .groupBy("pid")
            .agg(F.min(F.struct("base", "epoch")).alias("f"))
        )
        l_star = (
            l_un.where(F.col("base") >= F.col("lo"))
            .join(f_max, "pid")
            .where(F.col("last") < F.col("fmax"))
            .groupBy("pid")
            .agg(F.min(F.struct("base", "last", "epoch")).alias("l"))
        )
        found = {
            r["pid"]: r.asDict(recursive=True)
            for r in lost.join(f_star, "pid", "full").join(l_star, "pid", "full").collect()
        }
        divs = _divergences(spark, fol, lead, rows, found)
    finally:
        B.unpersist()
    out = {}
    for i, (topic_, part, _lead, r, _rj) in enumerate(pairs):
        got = found.get(i) or {}
        loss = NO_LOSS
        if got.get("records"):
            loss = Loss(got["records"], got["bytes"], got["batches"], got["first_offset"],
                        got["last_offset"], got["first_timestamp"], got["last_timestamp"], ())  # fmt: skip
        out[(topic_, part, str(r.partition_dir))] = Comparison(divs.get(i), 0, loss)
    return out


def _divergences(spark, fol, lead, rows, found) -> dict[int, Divergence]:
    """Each follower's first divergence, from its least unmatched batch (``f``) and the
    leader's least unmatched one below the follower's last (``l``): ``l`` comes first when the
    follower's next batch above it is no later than ``f`` (see the module). One more small job:
    that next batch, and the leader's batch holding ``f``'s offset (its epoch)."""
    from pyspark.sql import functions as F

    lo = {row[0]: row[5] for row in rows}
    asks = []  # (pid, after: the leader batch's last offset or null, at: f's offset or null)
    for pid, got in found.items():
        f, lb = got.get("f"), got.get("l")
        if f is not None or lb is not None:
            asks.append((pid, None if lb is None or f is None else lb["last"],
                         None if f is None else max(f["base"], lo[pid])))  # fmt: skip
    if not asks:
        return {}
    Q = F.broadcast(spark.createDataFrame(asks, "pid int, after long, at long"))
    nxt = (
        fol.join(Q, "pid")
        .where(F.col("after").isNotNull() & (F.col("base") > F.col("after")))
        .groupBy("pid")
        .agg(F.min("base").alias("next"))
    )
    cover = (
        lead.join(Q, "pid")
        .where((F.col("base") <= F.col("at")) & (F.col("at") <= F.col("last")))
        .groupBy("pid")
        .agg(F.min(F.struct("base", "epoch")).alias("cover"))
    )
    more = {r["pid"]: r.asDict(recursive=True) for r in nxt.join(cover, "pid", "full").collect()}
    out = {}
    for pid, _after, at in asks:
        got, extra = found[pid], more.get(pid) or {}
        f, lb = got.get("f"), got.get("l")
        nxt_base = extra.get("next")
        if lb is not None and (f is None or (nxt_base is not None and nxt_base <= f["base"])):
            out[pid] = Divergence(lb["base"], None, lb["epoch"])
        else:
            cover = extra.get("cover")
            out[pid] = Divergence(at, f["epoch"], None if cover is None else cover["epoch"])
    return out
