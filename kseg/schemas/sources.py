"""Where the schemas come from: the ``_schemas`` topic found in (or beside) the paths given, a
``_schemas`` partition or root named by ``--schemas``, or a file (or directory of files) of
schemas exported from the registry's REST API.

Every replica of ``_schemas`` found is replayed (the topic is small) and the one that reached
the highest offset is used: several broker roots hold one copy each, and a lagging follower
knows fewer schemas. Damage in ``_schemas`` stops that replica's replay there, as a broker's
recovery truncates there (the registry would read no further): a problem, and the schemas
before it still count.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from kseg.format.errors import CorruptionError
from kseg.outcome import BadOption
from kseg.schemas.registry import UNREADABLE, Registry, version_from_export
from kseg.storage import files as F
from kseg.storage import tree
from kseg.storage.partition import Partition
from kseg.storage.uri import as_path

TOPIC = "_schemas"  # Confluent Schema Registry's and Karapace's kafkastore.topic default
OPTION = "--schemas"
MAX_EXPORT_BYTES = 1 << 30  # an export file read whole: larger is not a registry's export


def load(paths: list[Path], schemas: Path | None = None, option: str = "--payload") -> Registry:
    """The registry for ``paths`` (``--schemas``, when given, instead of looking beside them).
    BadOption (usage) when there is none to be had: nothing found, or a file that is not an
    export."""
    if schemas is not None:
        return _load_given(schemas, OPTION)
    dirs = find_topic_dirs(paths)
    if not dirs:
        looked = ", ".join(str(p) for p in paths)
        raise BadOption(
            f"no {TOPIC} topic found in or beside {looked}: name its partition directory, a "
            f"root that holds it, or a file of schemas exported from the registry"
            f"{' with ' + OPTION if option != 'PATH' else ''}",
            option,
        )
    return replay_best(dirs)


def load_to_decode(
    paths: list[Path], schemas: Path | None = None, option: str = "--payload"
) -> Registry:
    """``load``, for decoding: a registry that holds no schema (an empty ``_schemas``, an empty
    export, damage before the first schema) is BadOption too: nothing to decode by is never
    clean."""
    reg = load(paths, schemas, option)
    if not reg.versions and not reg.removed:
        said = f": {reg.problems[0]['message']}" if reg.problems else ""
        raise BadOption(f"{reg.source} holds no schema{said}", OPTION if schemas else option)
    return reg


def find_topic_dirs(paths: list[Path]) -> list[Path]:
    """``_schemas-<n>`` partition dirs in each root given and beside each partition dir or file
    given (its log dir), each once, in the order found."""
    places: list[str] = []
    found: list[Path] = []
    for p in paths:
        try:
            lay = tree.layout(str(p))
        except tree.InputError:
            continue  # the command itself says what is wrong with it
        if lay.kind in (tree.ROOT, tree.ROOTS):
            found.extend(as_path(pdir) for _ld, pdir, name in lay.partitions if _ours(name))
        elif "://" in str(p):
            continue  # a URI's partition dir or file: name the topic with the schemas option
        elif lay.kind == tree.PARTITION:
            places.append(os.path.dirname(os.path.abspath(lay.path)))
        else:
            places.append(os.path.dirname(os.path.dirname(os.path.abspath(p))))
    for place in places:
        try:
            names = sorted(os.listdir(place))
        except OSError:
            continue
        for n in names:
            if _ours(F.parse_partition_dir(n)) and os.path.isdir(os.path.join(place, n)):
                found.append(Path(place, n))
    out: list[Path] = []
    seen: set = set()
    for d in found:
        real = str(d) if "://" in str(d) else os.path.realpath(d)
        if real not in seen:
            seen.add(real)
            out.append(d)
    return out


def _ours(name) -> bool:
    return name is not None and name.topic == TOPIC and name.state is None


def _load_given(path: Path, option: str) -> Registry:
    if not path.exists():
        raise BadOption(f"{path}: no such file or directory", option)
    if path.is_file():
        return load_export([path], option)
    if not path.is_dir():
        raise BadOption(f"{path}: neither a file nor a directory", option)
    try:
        lay = tree.layout(str(path))
    except tree.InputError:
        lay = None
    if lay is not None and lay.kind == tree.PARTITION:
        return replay_best([path])
    if lay is not None and lay.kind in (tree.ROOT, tree.ROOTS):
        dirs = [Path(pdir) for _ld, pdir, name in lay.partitions if _ours(name)]
        if not dirs:
            raise BadOption(f"{path}: no {TOPIC} partition in it", option)
        return replay_best(dirs)
    files = sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
    if not files:
        raise BadOption(
            f"{path}: neither a {TOPIC} partition, a log.dirs root, nor a directory of .json "
            "schema exports",
            option,
        )
    return load_export(files, option)


# -- the topic --------------------------------------------------------------------------------


def replay(pdir: Path) -> Registry:
    """One replica of ``_schemas``, replayed from its first segment."""
    reg = Registry(f"{TOPIC} in {pdir}", str(pdir))
    try:
        segments = Partition(pdir).segments
    except OSError as exc:
        reg.problem(None, f"{exc.filename or pdir}: {exc.strerror or exc}", UNREADABLE)
        reg.unreadable = True
        return reg
    for seg in segments:
        try:
            for batch in seg.batches(validate=True):
                if getattr(batch, "is_control", False):
                    continue  # a transaction marker: no schema (the registry does not write them)
                for rec in batch.records():
                    reg.apply(rec.key, rec.value, rec.offset)
                    reg.end_offset = rec.offset
        except CorruptionError as exc:
            reg.problem(exc.offset, f"{exc.in_file(seg.log)}; the records after it are not "
                        "replayed (Kafka's recovery truncates there)", file=str(seg.log))  # fmt: skip
            reg.damaged = True
            return reg
        except OSError as exc:
            reg.problem(None, f"{exc.filename or seg.log}: {exc.strerror or exc}", UNREADABLE,
                        str(seg.log))  # fmt: skip
            reg.unreadable = True
            return reg
    return reg


def replay_best(dirs: list[Path]) -> Registry:
    """Each replica replayed; the one that reached the highest offset (the first of equals)."""
    regs = [replay(d) for d in dirs]
    best = max(regs, key=lambda r: r.end_offset)  # max keeps the first of equals
    others = [r.source for r in regs if r is not best]
    if others:
        best.notes.append(
            f"{len(others)} other replica{'s' if len(others) > 1 else ''} of {TOPIC} "
            f"({', '.join(others)}); this one reached offset {best.end_offset}, the highest"
        )
    return best


# -- an export ---------------------------------------------------------------------------------


def load_export(files: list[Path], option: str = OPTION) -> Registry:
    """Schemas saved from the REST API: each file a JSON array of schema objects (``GET
    /schemas``), one object (``GET /subjects/S/versions/V``), or JSON Lines of them."""
    src = str(files[0]) if len(files) == 1 else f"{len(files)} files in {files[0].parent}"
    reg = Registry(f"exported schemas ({src})", str(files[0]) if len(files) == 1 else None)
    for f in files:
        try:
            if f.stat().st_size > MAX_EXPORT_BYTES:
                raise BadOption(f"{f}: larger than {MAX_EXPORT_BYTES} bytes", option)
            data = f.read_bytes()
        except OSError as exc:
            raise BadOption(f"{f}: {exc.strerror or exc}", option) from None
        for n, obj in enumerate(_objects(data, f, option)):
            where = f"{f}: schema {n + 1}"
            try:
                reg.add(version_from_export(obj, where))
            except ValueError as exc:
                reg.problem(None, str(exc))
    return reg


def _objects(data: bytes, f: Path, option: str) -> list:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        out = []
        for i, line in enumerate(data.splitlines()):
            if not line.strip():
                continue
            try:
                out.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise BadOption(f"{f} line {i + 1}: not JSON: {exc}", option) from None
        return out
    return obj if type(obj) is list else [obj]


def listing(paths: list[Path]) -> Registry:
    """What `kseg schemas PATH...` lists: ``_schemas`` partition dirs given by path, else the
    topic in or beside the paths; a file (or a directory of .json files) is an export."""
    for p in paths:
        if not p.is_file():
            try:
                tree.layout(str(p))  # a wrong path is said as every command says it
            except tree.InputError:
                if len(paths) == 1 and p.is_dir():
                    return _load_given(p, "PATH")  # a directory of exported .json files
                raise
    if len(paths) == 1 and paths[0].is_file() and F.file_kind(paths[0]).kind == F.UNKNOWN:
        return _load_given(paths[0], "PATH")  # not a Kafka file: an export
    given = []
    for p in paths:
        name = F.parse_partition_dir(p.resolve().name)
        if _ours(name) and p.is_dir():
            given.append(p)
    if given and len(given) == len(paths):
        return replay_best(given)
    return load(paths, option="PATH")
