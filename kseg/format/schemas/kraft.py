"""KRaft control record values (Kafka's clients/src/main/resources/common/message/):
LeaderChangeMessage, SnapshotHeaderRecord, SnapshotFooterRecord, KRaftVersionRecord,
VotersRecord. No frame: always schema version 0, flexible. Keyed by control record type."""

from __future__ import annotations

from kseg.format.schema import f, schema

_VOTER = (f("VoterId int32 0+"),)

BY_CONTROL_TYPE = {
    2: schema("LeaderChangeMessage", "0", "0+",
              f("Version int16 0+"),
              f("LeaderId int32 0+"),
              f("Voters []Voter 0+", *_VOTER),
              f("GrantingVoters []Voter 0+", *_VOTER)),
    3: schema("SnapshotHeaderRecord", "0", "0+",
              f("Version int16 0+"),
              f("LastContainedLogTimestamp int64 0+")),
    4: schema("SnapshotFooterRecord", "0", "0+",
              f("Version int16 0+")),
    5: schema("KRaftVersionRecord", "0", "0+",
              f("Version int16 0+"),
              f("KRaftVersion int16 0+")),
    6: schema("VotersRecord", "0", "0+",
              f("Version int16 0+"),
              f("Voters []Voter 0+",
                f("VoterId int32 0+"),
                f("VoterDirectoryId uuid 0+"),
                f("Endpoints []Endpoint 0+",
                  f("Name string 0+"),
                  f("Host string 0+"),
                  f("Port uint16 0+")),
                f("KRaftVersionFeature KRaftVersionFeature 0+",
                  f("MinSupportedVersion int16 0+"),
                  f("MaxSupportedVersion int16 0+")))),
}  # fmt: skip
