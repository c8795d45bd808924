"""A share group's share-partition state, from `__share_group_state` (KIP-932): share groups
commit no offsets to `__consumer_offsets`; their progress is the share-partition start offset."""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path

from kseg.offsets.groups import Group
from kseg.offsets.placement import best_replica
from kseg.storage import files as F
from kseg.storage.tree import Selection

SHARE_STATE_TOPIC = "__share_group_state"


def share_offsets(
    g: Group,
    sel: Selection,
    records: Callable[[Path, Callable, str], Generator[dict, None, list[tuple]]],
) -> Generator[dict, None, list[dict]]:
    """A share group's share-partition state from `__share_group_state` (every partition of
    it under ``sel``'s roots, its records as ``records(pdir, decode, group)`` gives them:
    (record, producer id, where, timestamp); only this group's records are kept): ShareSnapshot
    replaces a share-partition's state, ShareUpdate changes its start offset and leader epoch
    when it carries one (-1: unchanged) and adds state batches, a tombstone deletes it. Returns
    ``share_offset`` events: the share-partition start offset (SPSO), not a committed offset
    (share groups commit none); the in-flight state batches are not merged or shown."""
    from kseg.format.coordinator import share_group_state

    state: dict[tuple[str, int], dict] = {}
    names = dict(g.share_topic_names)
    replicas = {}
    for t in sel.targets():
        name = F.parse_partition_dir(t.partition_dir.name)
        if name is not None and name.state is None and name.topic == SHARE_STATE_TOPIC:
            replicas.setdefault(name.partition, []).append(t.partition_dir)
    if not replicas:
        yield {
            "type": "notice",
            "message": f"{g.group!r} is a share group: its share-partition state is in "
            f"{SHARE_STATE_TOPIC}, and no partition of it is under the roots",
        }
        return []
    for p in sorted(replicas):
        pdir, note = best_replica(replicas[p])
        if note:
            yield {"type": "notice", "message": note}
        for rec, _pid, where, ts in (yield from records(pdir, share_group_state, g.group)):
            if rec.get("group_id") != g.group:
                continue
            key = (rec["topic_id"], rec["partition"])
            if rec.get("tombstone"):
                state.pop(key, None)
            elif rec["key_version"] == 0:  # ShareSnapshot
                state[key] = {**rec, "where": where, "ts": ts}
            elif key in state:  # ShareUpdate: only on top of a snapshot
                cur = state[key]
                if rec["start_offset"] != -1:
                    cur["start_offset"] = rec["start_offset"]
                if rec["leader_epoch"] != -1:
                    cur["leader_epoch"] = rec["leader_epoch"]
                cur["where"], cur["ts"] = where, ts
    out = []
    for (tid, part), cur in sorted(state.items()):
        file, batch_base, offset = cur["where"]
        out.append({
            "type": "share_offset", "group": g.group, "topic": names.get(tid),
            "topic_id": tid, "partition": part, "start_offset": cur["start_offset"],
            "state_epoch": cur["state_epoch"], "leader_epoch": cur["leader_epoch"],
            "write_timestamp": cur["ts"], "file": file,
            "batch_base_offset": batch_base, "record_offset": offset,
        })  # fmt: skip
    return out
