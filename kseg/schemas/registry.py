"""The Schema Registry's state, replayed from its ``_schemas`` records as the registry replays
them on start (kseg.format.schema_registry reads each key and value), or loaded from schemas
its REST API exported.

What decoding needs: every schema id to its type, text and references. What ``kseg schemas``
lists: every subject's versions, with their ids and whether they are deleted. A record that
does not parse is a problem (its offset and why) and is skipped, as the registry's reader
skips it; the replay goes on.
"""

from __future__ import annotations

from typing import NamedTuple

from kseg.format import schema_registry as SR

AVRO, PROTOBUF, JSON = "AVRO", "PROTOBUF", "JSON"
INVALID, UNREADABLE = "invalid", "unreadable"  # the kinds of a problem
DEFAULT_CONTEXT = "."


class Reference(NamedTuple):
    name: str  # the name the schema uses (an Avro full name, a Protobuf import path)
    subject: str
    version: int


class Version(NamedTuple):
    """One version of a subject."""

    subject: str
    version: int
    id: int
    schema_type: str
    schema: str
    references: tuple[Reference, ...]
    deleted: bool
    offset: int | None  # where in ``_schemas`` it was last written (None: from an export)


def context_of(subject: str) -> str:
    """The context a subject lives in: ``:.ctx:name`` -> ``.ctx``; a plain subject -> ``.``."""
    if subject.startswith(":."):
        end = subject.find(":", 2)
        if end > 0:
            return subject[1:end]
    return DEFAULT_CONTEXT


class Registry:
    """``versions``: (subject, version) -> Version; ``by_id``: schema id -> a Version that
    carries it (ids of the default context before any other: a framed value's id is looked up
    there, as a client without a context does; then hard-deleted ones, see ``removed``)."""

    def __init__(self, source: str, path: str | None = None) -> None:
        self.source = source  # what was replayed or loaded (shown by `kseg schemas`)
        self.path = path  # the _schemas partition dir or the export file (problems name it)
        self.versions: dict[tuple[str, int], Version] = {}
        # versions a tombstone hard-deleted whose record kseg read before it: the registry no
        # longer serves them, but records framed with their ids still decode by them
        self.removed: dict[tuple[str, int], Version] = {}
        self.problems: list[dict] = []  # {"file", "offset", "kind", "message"}: see problem
        self.records = 0  # _schemas records replayed
        self.notes: list[str] = []  # what else the replay saw (other replicas, configs)
        self.configs: dict[str | None, dict] = {}  # subject (None: global) -> config value
        self.modes: dict[str | None, dict] = {}
        self._by_id: dict[int, Version] | None = None
        self.end_offset = -1  # the last offset replayed (replicas: the longest wins)
        self.damaged = False  # the replay stopped at damage
        self.unreadable = False
        # (context, id) -> the versions that hold it now (see _clash)
        self._holders: dict[tuple[str, int], dict[tuple[str, int], Version]] = {}

    # -- replay -----------------------------------------------------------------------------

    def apply(self, key: bytes | None, value: bytes | None, offset: int | None) -> None:
        """One ``_schemas`` record, in log order: the latest record of a key wins (what
        compaction keeps), a null value deletes the key."""
        self.records += 1
        try:
            k = SR.parse_key(key)
            v = None if value is None else SR.parse_value(k, value)
        except ValueError as exc:
            self.problem(offset, str(exc))
            return
        if k.keytype == SR.SCHEMA:
            sv = (k.subject, k.version)
            if v is None:  # a hard delete: gone from the registry (kept here, see ``removed``)
                gone = self._drop(sv)
                if gone is not None:
                    self.removed[sv] = gone
                return
            if (v["subject"], v["version"]) != sv:  # the registry keeps it under its key
                self.problem(
                    offset, f"the value's subject {v['subject']!r} version {v['version']} is not "
                    f"its key's ({k.subject!r} version {k.version}): kept under the key's",
                )  # fmt: skip
            ver = _version(v, offset)._replace(subject=k.subject, version=k.version)
            clash = self._clash(ver)
            if clash is not None:  # the registry rejects it ("a schema with duplicate ID")
                self.problem(
                    offset, f"schema id {ver.id} of {ver.subject!r} version {ver.version} "
                    f"already names another schema ({clash.subject!r} version {clash.version}): "
                    "skipped, as the registry skips it",
                )  # fmt: skip
                return
            self.removed.pop(sv, None)
            self.add(ver)
        elif k.keytype == SR.DELETE_SUBJECT and v is not None:
            # versions 1 to the one named are (soft-)deleted; later ones stay
            for (subject, version), ver in list(self.versions.items()):
                if subject == v["subject"] and version <= v["version"]:
                    self.add(ver._replace(deleted=True))
        elif k.keytype == SR.CLEAR_SUBJECT and v is not None:
            # the subject's deleted versions leave the registry (written on a switch to IMPORT
            # mode, after tombstones for the rest)
            for sv, ver in list(self.versions.items()):
                if sv[0] == v["subject"] and ver.deleted:
                    self.removed[sv] = self._drop(sv)
        elif k.keytype == SR.CONFIG:
            _keep(self.configs, k.subject, v)
        elif k.keytype == SR.MODE:
            _keep(self.modes, k.subject, v)
        # NOOP (the registry's own "I have read up to here" marker) and CONTEXT carry no
        # schema: nothing to do

    def problem(
        self, offset: int | None, message: str, kind: str = INVALID, file: str | None = None
    ) -> None:
        """Something the replay or load met: invalid data (a record the registry skips,
        damage) or unreadable (kind ``unreadable``: an operational failure), in ``file`` (by
        default the partition dir or export)."""
        self.problems.append(
            {"file": file or self.path, "offset": offset, "kind": kind, "message": message}
        )

    def _clash(self, ver: Version) -> Version | None:
        """A version the registry holds now, in ``ver``'s context, whose id is ``ver``'s and
        whose schema is another (an id no version holds any longer is free again)."""
        for other in self._holders.get((context_of(ver.subject), ver.id), {}).values():
            if other.schema != ver.schema and (other.subject, other.version) != (
                ver.subject, ver.version
            ):  # fmt: skip
                return other
        return None

    def add(self, ver: Version) -> None:
        self._by_id = None
        old = self.versions.get((ver.subject, ver.version))
        if old is not None:
            self._drop((ver.subject, ver.version))
        self.versions[ver.subject, ver.version] = ver
        held = self._holders.setdefault((context_of(ver.subject), ver.id), {})
        held[ver.subject, ver.version] = ver

    def _drop(self, sv: tuple[str, int]) -> Version | None:
        """``sv`` leaves the registry; returns its version (None: it held none)."""
        self._by_id = None
        ver = self.versions.pop(sv, None)
        if ver is not None:
            key = (context_of(ver.subject), ver.id)
            held = self._holders.get(key, {})
            held.pop(sv, None)
            if not held:
                self._holders.pop(key, None)
        return ver

    # -- lookups ----------------------------------------------------------------------------

    @property
    def by_id(self) -> dict[int, Version]:
        if self._by_id is None:
            ids: dict[int, Version] = {}
            for ver in sorted(self.versions.values(), key=_lookup_order):
                ids.setdefault(ver.id, ver)
            for ver in self.removed.values():
                ids.setdefault(ver.id, ver)
            self._by_id = ids
        return self._by_id

    def referenced(self, ver: Version, depth: int) -> list[tuple[str, Version]]:
        """Every schema ``ver`` references, directly or not, each once, those referenced first
        (the order a parser must see them in): (the name it is referenced by, its Version).
        ValueError when one is not in the registry or the chain is deeper than ``depth``."""
        out: list[tuple[str, Version]] = []
        seen: set[tuple[str, int]] = set()

        def visit(v: Version, level: int) -> None:
            if level > depth:
                raise ValueError(f"references nest deeper than {depth} (a cycle?)")
            for ref in v.references:
                target = self._version_of(ref.subject, ref.version)
                if target is None:
                    raise ValueError(
                        f"reference {ref.name!r} (subject {ref.subject!r} version "
                        f"{ref.version}) is not in the registry"
                    )
                if (target.subject, target.version) in seen:
                    continue
                seen.add((target.subject, target.version))
                visit(target, level + 1)
                out.append((ref.name, target))

        visit(ver, 1)
        return out

    def _version_of(self, subject: str, version: int) -> Version | None:
        """A reference's target: that version (one hard-deleted too: its text was read), or
        for version -1 the subject's latest."""
        if version == -1:
            mine = [v for (s, _n), v in self.versions.items() if s == subject]
            return max(mine, key=lambda v: v.version, default=None)
        return self.versions.get((subject, version)) or self.removed.get((subject, version))

    def describe(self) -> str:
        """Where the schemas came from, for a message: ``_schemas in <dir>, 12 schemas``."""
        n = len(self.by_id)
        return f"{self.source}: {n} schema{'s' if n != 1 else ''}"


def _lookup_order(ver: Version) -> tuple:
    """By id: the default context's versions first, live before deleted, the earliest."""
    return (context_of(ver.subject) != DEFAULT_CONTEXT, ver.deleted, ver.subject, ver.version)


def _keep(table: dict, subject: str | None, value: dict | None) -> None:
    if value is None:
        table.pop(subject, None)
    else:
        table[subject] = value


def _version(v: dict, offset: int | None) -> Version:
    return Version(
        subject=v["subject"],
        version=v["version"],
        id=v["id"],
        schema_type=v.get("schemaType") or AVRO,
        schema=v["schema"],
        references=tuple(
            Reference(r["name"], r["subject"], r["version"]) for r in v.get("references") or ()
        ),
        deleted=bool(v.get("deleted")),
        offset=offset,
    )


def version_from_export(obj: dict, where: str) -> Version:
    """A schema as the REST API shows it (``GET /schemas``, ``GET /subjects/S/versions/V``):
    subject, version, id, schema, schemaType (absent: AVRO), references, deleted."""
    v = SR.check_schema_value(obj, where)
    return _version(v, None)
