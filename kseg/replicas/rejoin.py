"""What a follower's log becomes when it rejoins the leader: Kafka's epoch-matching truncation.

Pure functions over leader-epoch caches (no I/O), so the rule can be checked on its own. From
Kafka 4.x:

- the leader answers a follower's last fetched epoch E with LeaderEpochFileCache.endOffsetFor:
  (E, its log end) when E is its latest epoch; else (the largest epoch <= E, the start offset of
  the first epoch > E), or (E, that start) when it knows no epoch <= E; (-1, -1) when it knows
  no epoch above E;
- the fetch diverges (Partition.validateFetchOffsetAndMaybeGetDivergingEpoch) when that epoch is
  below E or that end offset below the follower's fetch offset (its log end);
- the follower then truncates (AbstractFetcherThread.getOffsetTruncationState): when it knows
  the leader's epoch, to min(its own end for that epoch, the leader's end offset, its log end),
  done; when it does not, to min(its end for the largest epoch below, its log end), and asks
  again with its new latest epoch (KIP-279: one round per epoch it does not share); when it
  tracks no epoch at or below it, to min(the leader's end offset, its log end);
- a follower with no epochs first truncates to its high watermark (AbstractFetcherThread
  .maybeTruncate: truncateToHighWatermark; on a restarted broker, the one its root's
  replication-offset-checkpoint holds), then fetches by offset alone: past the leader's log end
  it truncates to it; below the leader's log start it truncates fully and starts there (fetchOffsetAndTruncate);
- the leader's cache holds the epoch it leads in: Partition.makeLeader assigns the new leader
  epoch, greater than every earlier one, at its log end (UnifiedLog.assignEpochStartOffset), so
  "the latest cached epoch is always the largest" (endOffsetFor). A replica chosen to lead whose
  cache stops below a follower's epoch (``--leader`` naming an old replica) gets that entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kseg.format.checkpoint import EpochEntry

UNDEFINED = -1  # UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET


class Rejoin(NamedTuple):
    truncate_to: int  # the follower's log end once it has truncated
    fully: bool  # truncateFullyAndStartAt(the leader's log start): its whole log goes
    steps: tuple[tuple[int, int, int], ...]  # (epoch asked, leader's epoch, leader's end) per round
    rule: str  # "epoch" | "leader_end" (no epochs: by offset) | "undefined" (the leader knows no such epoch)


def end_offset_for(epochs: Sequence[EpochEntry], requested: int, log_end: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor: (epoch, end offset) for ``requested``."""
    if requested == UNDEFINED:
        return UNDEFINED, UNDEFINED
    if epochs and epochs[-1].epoch == requested:
        return requested, log_end
    higher = next((e for e in epochs if e.epoch > requested), None)
    if higher is None:
        return UNDEFINED, UNDEFINED
    floor = None
    for e in epochs:
        if e.epoch <= requested:
            floor = e
    if floor is None:
        return requested, higher.start_offset
    return floor.epoch, higher.start_offset


def truncate_from_end(epochs: Sequence[EpochEntry], end: int) -> tuple[EpochEntry, ...]:
    """LeaderEpochFileCache.truncateFromEnd: drop the entries starting at or after ``end``."""
    return tuple(e for e in epochs if e.start_offset < end)


def truncate_from_start(epochs: Sequence[EpochEntry], start: int) -> tuple[EpochEntry, ...]:
    """LeaderEpochFileCache.truncateFromStart: the entries starting at or before ``start`` go,
    the last of them kept with ``start`` as its start offset."""
    below = [e for e in epochs if e.start_offset <= start]
    rest = [e for e in epochs if e.start_offset > start]
    if below:
        rest.insert(0, EpochEntry(below[-1].epoch, start))
    return tuple(rest)


def assigned(entries: Sequence[EpochEntry]) -> tuple[EpochEntry, ...]:
    """The cache built by ``assign``-ing ``entries`` in order (as the checkpoint is read): an
    entry that repeats the latest epoch at a later offset changes nothing; any other drops the
    entries it is not above (epoch or start offset not below its own)."""
    out: list[EpochEntry] = []
    for e in entries:
        if e.epoch < 0 or e.start_offset < 0:
            continue  # Kafka throws on such a line; kseg.format.checkpoint refuses them earlier
        if out and out[-1].epoch == e.epoch and e.start_offset >= out[-1].start_offset:
            continue
        while out and (out[-1].epoch >= e.epoch or out[-1].start_offset >= e.start_offset):
            out.pop()
        out.append(e)
    return tuple(out)


def elected(
    leader_epochs: Sequence[EpochEntry], leader_end: int, epochs: Sequence[EpochEntry]
) -> tuple[EpochEntry, ...]:
    """The leader's cache once it leads: when its latest epoch is below the follower's (or it
    has none), the epoch it is elected in (above every one the follower asks for) starts at its
    log end. Otherwise unchanged: that entry would change no answer endOffsetFor gives."""
    leader_epochs = tuple(leader_epochs)
    if epochs and (not leader_epochs or leader_epochs[-1].epoch < epochs[-1].epoch):
        return (*leader_epochs, EpochEntry(epochs[-1].epoch + 1, leader_end))
    return leader_epochs


def rejoin(
    leader_epochs: Sequence[EpochEntry],
    leader_start: int,
    leader_end: int,
    epochs: Sequence[EpochEntry],
    log_end: int,
    high_watermark: int | None = None,
) -> Rejoin:
    """What a follower with ``epochs`` and ``log_end`` truncates to when it fetches from a
    leader with ``leader_epochs`` over [``leader_start``, ``leader_end``). ``high_watermark``:
    the follower's (None: unknown, not truncated to), used only when it has no epochs."""
    epochs = tuple(epochs)
    if not epochs and high_watermark is not None:
        log_end = min(log_end, max(high_watermark, 0))
    leader_epochs = elected(leader_epochs, leader_end, epochs)
    end = log_end
    steps: list[tuple[int, int, int]] = []
    rule = "epoch"
    # every round either ends or drops at least one of the follower's epochs
    for _ in range(len(epochs) + 2):
        if not epochs:
            break
        asked = epochs[-1].epoch
        le, lo = end_offset_for(leader_epochs, asked, leader_end)
        steps.append((asked, le, lo))
        if le >= asked and lo >= end:
            break  # no divergence: it fetches from its log end
        if lo == UNDEFINED:
            # the follower truncates to its fetch offset, i.e. keeps its log (Kafka warns
            # "leader replied with an unknown offset"): nothing this rule can say more
            return Rejoin(end, False, tuple(steps), "undefined")
        fe, fo = end_offset_for(epochs, le, end)
        if fo == UNDEFINED:  # it tracks no epoch at or below the leader's (endOffsetForEpoch: None)
            end = min(lo, end)
        elif fe != le:  # it does not know the leader's epoch: truncate and ask again
            end = min(fo, end)
        else:
            end = min(fo, lo, end)
        epochs = truncate_from_end(epochs, end)
    if not epochs and end > leader_end:  # OFFSET_OUT_OF_RANGE: the leader's end is below its own
        end, rule = leader_end, "leader_end"
    if end < leader_start:  # below the leader's log start: everything goes
        return Rejoin(leader_start, True, tuple(steps), rule)
    return Rejoin(end, False, tuple(steps), rule)
