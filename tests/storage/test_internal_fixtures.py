"""LogWriter writes metadata, KRaft control and coordinator records through the schema encoder;
`kseg dump` (the real entry point) reads every type back at its oldest and newest version, with
tagged fields present and absent, and shows a lie as an error on that record and goes on."""

from __future__ import annotations

import json

import kseg
from kseg.format import metadata as md
from kseg.format.schema import Field, in_range
from kseg.format.schemas import group, kraft, metadata, share, txn
from tests.helpers import run_kseg

UUID = "bb7pOvAQRgy5C6qqu14vfA"


def example(fields, version: int) -> dict:
    """A value for every field the version has, none at its default (tagged fields are written)."""

    def base(fl: Field):
        t = fl.type
        if t == "struct":
            return example(fl.fields, version)
        return {"bool": not fl.default_value() if not fl.array else True, "uuid": UUID,
                "string": "x", "bytes": "AQI=", "records": "AQI=", "float64": 1.5}.get(t, 7)  # fmt: skip

    out = {}
    for fl in fields:
        if in_range(fl.versions, version):
            out[fl.name] = [base(fl)] if fl.array else base(fl)
    return out


def _contains(got, want) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(_contains(got.get(k), v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_contains, got, want))
    return got == want


def _events(out: bytes) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def _versions(sch):
    return sorted({sch.valid[0], sch.valid[1]})


def test_every_metadata_and_kraft_control_record_round_trips_through_dump(tmp_path):
    pdir = tmp_path / "__cluster_metadata-0"
    expected = []
    with kseg.LogWriter(pdir) as w:
        ctl = [(t, example(s.fields, 0)) for t, s in kraft.BY_CONTROL_TYPE.items()]
        w.append_kraft_control(ctl)
        expected += [("control", t, 0, data) for t, data in ctl]
        for sch in metadata.RECORDS:
            for v in _versions(sch):
                full = example(sch.fields, v)
                w.append_metadata([(sch.api_key, full, v), (sch.api_key, {}, v)])
                # the second: every tagged field absent, so Kafka's defaults come back
                empty = md.decode_metadata(None, md.encode_metadata(sch.api_key, {}, v))["data"]
                expected += [("meta", sch.api_key, v, full), ("meta", sch.api_key, v, empty)]
    proc = run_kseg("dump", str(pdir / "00000000000000000000.log"), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    got = [e for e in _events(proc.stdout) if e["type"] in ("record", "control")]
    assert (
        len(got)
        == len(expected)
        == 5
        + 2 * 2 * len(metadata.RECORDS)
        - 2 * sum(1 for s in metadata.RECORDS if s.valid[0] == s.valid[1])
    )
    for ev, (kind, key, version, data) in zip(got, expected, strict=True):
        d = ev["decoded"]
        assert (d.get("control_type") if kind == "control" else d["api_key"]) == key
        assert d["version"] == version
        shown = {k: v for k, v in d["data"].items() if k != "feature_level_name"}
        assert shown == data, (key, version)


def test_every_coordinator_record_round_trips_through_dump(tmp_path):
    pdir = tmp_path / "__consumer_offsets-0"
    expected = []
    with kseg.LogWriter(pdir) as w:
        for rtype, vsch in group.VALUES.items():
            for v in _versions(vsch):
                fields = {**example(group.KEYS[rtype].fields, 0), **example(vsch.fields, v)}
                if rtype == 2:  # classic consumer members: ConsumerProtocol bytes decoded
                    fields["protocol_type"] = "consumer"
                    for m in fields["members"]:
                        m["subscription"] = {"version": 3, "topics": ["t"], "user_data": None,
                                             "owned_partitions": [], "generation_id": 4,
                                             "rack_id": "r"}  # fmt: skip
                        m["assignment"] = {"version": 0, "user_data": "",
                                           "assigned_partitions": [{"topic": "t", "partitions": [0]}]}  # fmt: skip
                key_only = example(group.KEYS[rtype].fields, 0)
                w.append_coordinator("__consumer_offsets", [(rtype, fields, v)])
                w.append_coordinator("__consumer_offsets", [(rtype, key_only, v)])
                w.append_coordinator("__consumer_offsets", [(rtype, fields, v, True)])
                expected.append((rtype, v, fields, vsch))
    proc = run_kseg("dump", str(pdir), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    got = [e["decoded"] for e in _events(proc.stdout) if e["type"] == "record"]
    assert len(got) == 3 * len(expected)
    for (rtype, v, fields, vsch), d, bare, tomb in zip(
        expected, got[::3], got[1::3], got[2::3], strict=True
    ):
        assert d["key_version"] == rtype and d["value_version"] == v and tomb["tombstone"] is True
        for name, value in fields.items():  # nested structs also show the version's defaults
            assert _contains(d[name], value), (rtype, v, name)
        # tagged fields absent from the bytes come back at Kafka's defaults
        for fl in vsch.fields:
            if fl.tag is not None and in_range(fl.tagged, v):
                assert bare[fl.name] == fl.default_value() != d[fl.name], (rtype, v, fl.name)


def test_share_state_both_layouts_and_txn_state(tmp_path):
    pdir = tmp_path / "__share_group_state-0"
    with kseg.LogWriter(pdir) as w:
        for layout in ("4.0", "4.1"):
            for rtype, sch in share.LAYOUTS[layout].items():
                fields = {**example(share.KEYS[rtype].fields, 0), **example(sch.fields, 0)}
                w.append_coordinator("__share_group_state", [(rtype, fields, layout)])
    proc = run_kseg("dump", str(pdir), "-f", "json")
    got = [e["decoded"] for e in _events(proc.stdout) if e["type"] == "record"]
    assert proc.returncode == 0 and [d["layout"] for d in got] == ["4.0", "4.0", "4.1", "4.1"]
    tdir = tmp_path / "__transaction_state-0"
    with kseg.LogWriter(tdir) as w:
        for v in (0, 1):
            fields = {**example(txn.KEY.fields, 0), **example(txn.VALUE.fields, v)}
            bare = {"transactional_id": "t"}
            w.append_coordinator("__transaction_state", [(0, fields, v), (0, bare, v)])
    out = run_kseg("dump", str(tdir), "-f", "json").stdout
    d = [e["decoded"] for e in _events(out) if e["type"] == "record"]
    assert [x["value_version"] for x in d] == [0, 0, 1, 1]
    assert (d[2]["next_producer_id"], d[2]["client_transaction_version"]) == (7, 7)
    assert (d[2]["transaction_status"], d[2]["state"]) == (7, "PrepareEpochFence")
    # tagged fields: absent in v0 (defaults), absent from the bytes in the bare v1 record
    assert d[0]["next_producer_id"] == d[3]["next_producer_id"] == -1
    assert d[0]["previous_producer_id"] == d[3]["previous_producer_id"] == -1


def test_a_lie_is_shown_on_its_record_and_dump_goes_on(tmp_path):
    pdir = tmp_path / "__cluster_metadata-0"
    good = md.encode_metadata("topic_record", {"name": "t", "topic_id": UUID})
    with kseg.LogWriter(pdir) as w:
        w.append(
            [
                kseg.Record(None, b"\x00\x02\x00" + good[3:]),  # frame version 0
                kseg.Record(None, good[:3] + b"\xe9\x07" + good[4:]),  # a name of 1000 bytes
                kseg.Record(None, good),
            ]
        )
    proc = run_kseg("dump", str(pdir), "-f", "json")
    recs = [e for e in _events(proc.stdout) if e["type"] == "record"]
    assert proc.returncode == 0
    assert "frame version 0" in recs[0]["decoded"]["error"]
    assert recs[1]["decoded"]["field"] == "value byte 3 (name)"
    assert recs[2]["decoded"]["data"]["name"] == "t"
    text = run_kseg("dump", str(pdir)).stdout.decode()
    assert "frame version 0" in text and 'topic_record v0: {"name":"t"' in text


def test_remote_log_metadata_auto_selected(tmp_path):
    from kseg.format.schemas import remote_log

    pdir = tmp_path / "__remote_log_metadata-0"
    expected = []
    with kseg.LogWriter(pdir) as w:
        for sch in remote_log.RECORDS:
            for v in _versions(sch):
                data = example(sch.fields, v)
                w.append([kseg.Record(None, md.encode_remote_log_metadata(sch.api_key, data, v))])
                expected.append((sch.record, v, data))
    proc = run_kseg("dump", str(pdir), "-f", "json", "--skip-record-metadata")
    got = [e["decoded"] for e in _events(proc.stdout) if e["type"] == "record"]
    assert proc.returncode == 0 and not [e for e in _events(proc.stdout) if e["type"] == "batch"]
    assert [(d["record"], d["version"], d["data"]) for d in got] == expected


def test_snapshot_being_written_is_known_by_its_name(tmp_path):
    from kseg.storage import files as F

    name = "00000000000000000144-00000000017316372261234567.checkpoint.part"  # Kafka's random infix
    kind = F.file_kind(name)
    assert (kind.kind, kind.base_offset, kind.temp_suffix) == ("kraft_checkpoint", 144, ".part")
    assert F.snapshot_id(name) == (144, 1)
    pdir = tmp_path / "__cluster_metadata-0"
    with kseg.LogWriter(pdir) as w:
        w.append_kraft_control([(3, {"last_contained_log_timestamp": 5})])
        w.append_metadata([("no_op_record", {})])
    (pdir / "00000000000000000000.log").rename(pdir / name)
    proc = run_kseg("dump", str(pdir / name), "-f", "json")
    evs = _events(proc.stdout)
    assert (
        proc.returncode == 0 and evs[0]["state"] == "part" and evs[0]["snapshot_end_offset"] == 144
    )
    assert [e["decoded"]["record"] for e in evs if "decoded" in e] == [
        "snapshot_header_record",
        "no_op_record",
    ]
