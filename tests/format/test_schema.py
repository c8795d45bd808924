"""The schema interpreter: round trips for every declared record at every version (hypothesis),
and lies in the bytes giving positioned errors."""

from __future__ import annotations

import base64
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.format import coordinator as co
from kseg.format import metadata as md
from kseg.format.errors import CorruptionError
from kseg.format.schema import (
    UNKNOWN_TAGS,
    Field,
    Schema,
    decode_all,
    encode,
    in_range,
    write_uvarint,
)
from kseg.format.schemas import consumer_protocol, group, kraft, metadata, remote_log, share, txn

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}


def _b64(n_min: int, n_max: int):
    return st.binary(min_size=n_min, max_size=n_max).map(lambda b: base64.b64encode(b).decode())


def _base(fl: Field, version: int):
    t = fl.type
    if t in _INTS:
        return st.integers(*_INTS[t])
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "uuid":
        return st.binary(min_size=16, max_size=16).map(
            lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
        )
    if t == "string":
        return st.text(max_size=8)
    if t in ("bytes", "records"):
        return _b64(0, 8)
    return _struct(fl.fields, version)


def _field(fl: Field, version: int):
    s = st.lists(_base(fl, version), max_size=3) if fl.array else _base(fl, version)
    if in_range(fl.nullable, version):
        s = st.none() | s
    return s


def _struct(fields, version: int):
    present = {fl.name: _field(fl, version) for fl in fields if in_range(fl.versions, version)}
    return st.fixed_dictionaries(present)


ALL = [(s, v) for s in metadata.RECORDS for v in range(s.valid[0], s.valid[1] + 1)]
ALL += [(s, 0) for s in kraft.BY_CONTROL_TYPE.values()]
ALL += [(s, v) for s in remote_log.RECORDS for v in (0, 1)]
ALL += [(s, v) for s in group.VALUES.values() for v in range(s.valid[0], s.valid[1] + 1)]
ALL += [(s, 0) for s in group.KEYS.values()]
ALL += [(s, v) for s in (txn.VALUE,) for v in (0, 1)] + [(txn.KEY, 0)]
ALL += [(s, 0) for layout in share.LAYOUTS.values() for s in layout.values()]
ALL += [(s, 0) for s in share.KEYS.values()]
ALL += [
    (s, v) for s in (consumer_protocol.SUBSCRIPTION, consumer_protocol.ASSIGNMENT) for v in range(4)
]


@pytest.mark.parametrize(("sch", "version"), ALL, ids=lambda x: getattr(x, "name", x))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_every_record_at_every_version(sch: Schema, version: int, data):
    value = data.draw(_struct(sch.fields, version))
    flexible = in_range(sch.flexible, version)
    if flexible and data.draw(st.booleans()):  # unknown tagged fields are kept, byte for byte
        known = {fl.tag for fl in sch.fields if fl.tag is not None}
        tags = data.draw(st.sets(st.integers(0, 40).filter(lambda t: t not in known), max_size=2))
        if tags:
            value[UNKNOWN_TAGS] = {str(t): base64.b64encode(bytes([t])).decode() for t in tags}
    raw = encode(sch, value, version)
    assert decode_all(sch, raw, version) == value


def test_every_metadata_api_key_is_declared_once():
    keys = [s.api_key for s in metadata.RECORDS]
    assert sorted(keys) == sorted(set(keys)) and set(range(30)) - set(keys) == {6, 13, 16}


def test_feature_level_named():
    value = md.encode_metadata(
        "feature_level_record", {"name": "metadata.version", "feature_level": 27}
    )
    assert md.decode_metadata(None, value)["data"]["feature_level_name"] == "4.1-IV1"


def _err(fn, *args) -> CorruptionError:
    with pytest.raises(CorruptionError) as err:
        fn(*args)
    return err.value


def test_lies_are_positioned():
    topic = md.encode_metadata(
        "topic_record", {"name": "abc", "topic_id": "bb7pOvAQRgy5C6qqu14vfA"}
    )
    # a string running past the end: the name's compact length at byte 3 says 1000 bytes
    lie = bytearray(topic[:3])
    write_uvarint(lie, 1001)
    e = _err(md.decode_metadata, None, bytes(lie) + topic[4:])
    assert "exceeds the data" in e.message and e.field == "value byte 3 (name)"
    # an array count of 10^9 (PartitionRecord.replicas)
    part = md.encode_metadata(3, {"replicas": [1]}, 0)
    at = 3 + 4 + 16
    lie = bytearray(part[:at])
    write_uvarint(lie, 10**9 + 1)
    e = _err(md.decode_metadata, None, bytes(lie) + part[at + 1 :])
    assert "array length 1000000000" in e.message and e.field == f"value byte {at} (replicas)"
    # an unknown tagged field of absurd size
    noop = bytearray(md.encode_metadata("no_op_record", {})[:-1])
    noop += bytes([1, 9])  # one tagged field, tag 9
    write_uvarint(noop, 2**31)
    e = _err(md.decode_metadata, None, bytes(noop))
    assert "size 2147483648 exceeds" in e.message and e.field.startswith("value byte 5")
    # frame version 0, trailing bytes, unknown apiKey and version
    assert "frame version 0" in _err(md.decode_metadata, None, b"\x00\x02\x00").message
    assert "1 bytes left after" in _err(md.decode_metadata, None, topic + b"\x00").message
    assert (
        "unknown metadata apiKey 6" in _err(md.decode_metadata, None, b"\x01\x06\x00\x00").message
    )
    assert "version 9 is unknown" in _err(md.decode_metadata, None, b"\x01\x02\x09\x00").message
    # coordinator: an unknown record type, a value version Kafka never wrote
    assert "record type 99" in _err(co.consumer_offsets, struct.pack(">h", 99), None).message
    key, value = co.consumer_offsets_record(3, {"group_id": "g", "epoch": 1})
    e = _err(co.consumer_offsets, key, struct.pack(">h", 7) + value[2:])
    assert "version 7 is unknown" in e.message


def test_share_state_layout_is_reported():
    for layout in ("4.0", "4.1"):
        fields = {"group_id": "g", "topic_id": "bb7pOvAQRgy5C6qqu14vfA", "partition": 0,
                  "snapshot_epoch": 3, "state_batches": [{"first_offset": 1, "last_offset": 2}]}  # fmt: skip
        key, value = co.share_state_record(0, fields, layout)
        d = co.share_group_state(key, value)
        assert (
            d["layout"] == layout
            and d["snapshot_epoch"] == 3
            and d["state_batches"][0]["last_offset"] == 2
        )


def test_nullable_struct_markers_as_kafka_generates_them():
    # in the body: int8, -1 null / 1 present (StreamsGroupMemberMetadataValue.UserEndpoint)
    sch = group.VALUES[19]
    body = encode(sch, {"user_endpoint": None}, 0)
    assert b"\xff" in body and decode_all(sch, body, 0)["user_endpoint"] is None
    # inside a tagged field: unsigned varint, 0 null / 1 present (ClassicMemberMetadata, tag 0);
    # Kafka 4.1 writes a null one explicitly: tag 0, size 1, marker 0
    sch = group.VALUES[5]
    plain = encode(sch, {}, 0)
    explicit_null = plain[:-1] + b"\x01\x00\x01\x00"
    assert decode_all(sch, explicit_null, 0)["classic_member_metadata"] is None
    present = {"session_timeout_ms": 3, "supported_protocols": []}
    body = encode(sch, {"classic_member_metadata": present}, 0)
    assert body.endswith(b"\x01\x00\x07\x01\x00\x00\x00\x03\x01\x00")
    assert decode_all(sch, body, 0)["classic_member_metadata"] == present


def test_quorum_state_both_data_versions():
    v0 = md.read_quorum_state(
        b'{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
        b'"currentVoters":[{"voterId":1},{"voterId":2}],"data_version":0}'
    )
    assert v0 == {"cluster_id": "", "leader_id": 1, "leader_epoch": 2, "voted_id": -1,
                  "applied_offset": 0, "current_voters": [{"voter_id": 1}, {"voter_id": 2}],
                  "data_version": 0}  # fmt: skip
    v1 = md.read_quorum_state(b'{"leaderId":1,"leaderEpoch":1,"votedId":-1,'
                              b'"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}')  # fmt: skip
    assert v1["voted_directory_id"] == "AAAAAAAAAAAAAAAAAAAAAA" and v1["data_version"] == 1
    for bad, where in ((b'{"leaderId":1,', 14), (b"[1]", 0)):
        e = _err(md.read_quorum_state, bad)
        assert e.kind == "invalid_file" and e.position == where
    assert "data_version 2 is unknown" in _err(md.read_quorum_state, b'{"data_version":2}').message
