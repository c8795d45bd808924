"""Files named by a URI (``file://``, ``s3://``, ``hdfs://``, ``gs://``, ...), read through
``pyarrow.fs``: :class:`UriPath` stands where a :class:`pathlib.Path` stands for a local file, so
that :class:`~kseg.storage.segment.Segment`, :class:`~kseg.storage.partition.Partition` and the
tree walk (kseg.storage.tree) work on both, and only the few functions that open a file
(kseg.storage.mapped) tell them apart.

pyarrow is imported on the first URI only: a run on local paths never loads it. A URI is taken
literally (no percent-decoding; Kafka's file names need none); query options (``?region=``) are
not supported: configure the filesystem through its environment (AWS_*, HADOOP_HOME, ...), or
register one with :func:`register_filesystem`. ``file://`` URIs are read through pyarrow too, as
an ``s3://`` URI is (that is how the tests exercise this path without a cluster).
"""

from __future__ import annotations

import errno
import stat as st
import threading
from collections.abc import Iterator
from typing import NamedTuple

from kseg.storage.file_errors import NotRegularFileError

# Whole-file reads of a URI (indexes, checkpoints, snapshots) are refused above this size: a
# Kafka index is 10 MiB at most by default (segment.index.bytes); a lying or foreign file must not
# be pulled into memory whole.
MAX_WHOLE_READ = 64 << 20

_lock = threading.Lock()
_filesystems: dict[str, tuple[object, str]] = {}  # "scheme://netloc" -> (filesystem, prefix)
_registered: dict[str, object] = {}  # scheme -> filesystem (register_filesystem)


def is_uri(path: object) -> bool:
    """A string with a scheme (``file://`` included), or a :class:`UriPath`."""
    return isinstance(path, UriPath) or (isinstance(path, str) and "://" in path)


def as_path(path):
    """A :class:`UriPath` for a URI string, a :class:`pathlib.Path` for a local one; a Path or
    UriPath is returned as it is."""
    if isinstance(path, str):
        if "://" in path:
            return UriPath(path)
        from pathlib import Path

        return Path(path)
    return path


def register_filesystem(scheme: str, filesystem) -> None:
    """Read URIs of ``scheme`` through ``filesystem`` (a ``pyarrow.fs.FileSystem``) in this
    process, instead of ``pyarrow.fs.FileSystem.from_uri``: ``scheme://bucket/a/b`` is the
    filesystem's path ``bucket/a/b`` (as s3 paths are). For filesystems pyarrow cannot build from
    a URI (a ``PyFileSystem`` over fsspec, a ``SubTreeFileSystem``)."""
    with _lock:
        _registered[scheme] = filesystem
        for key in [k for k in _filesystems if k.startswith(scheme + "://")]:
            del _filesystems[key]


def unregister_filesystem(scheme: str) -> None:
    with _lock:
        _registered.pop(scheme, None)
        for key in [k for k in _filesystems if k.startswith(scheme + "://")]:
            del _filesystems[key]


def _split(uri: str) -> tuple[str, str]:
    """("scheme://netloc", "/path") of a URI, the path without a trailing slash."""
    scheme, sep, rest = uri.partition("://")
    if not sep or not scheme or "?" in rest or "#" in rest:
        raise ValueError(
            f"{uri}: not a URI kseg reads (scheme://host/path, no ?query: configure the "
            "filesystem through its environment)"
        )
    netloc, slash, path = rest.partition("/")
    path = (slash + path).rstrip("/")
    return f"{scheme}://{netloc}", path


def _filesystem(key: str) -> tuple[object, str]:
    """(pyarrow filesystem, prefix of its paths) for "scheme://netloc", made once per process
    (an S3 client resolves its region when made)."""
    found = _filesystems.get(key)
    if found is not None:
        return found
    with _lock:
        found = _filesystems.get(key)
        if found is None:
            scheme, _, netloc = key.partition("://")
            registered = _registered.get(scheme)
            if registered is not None:
                found = (registered, netloc)
            else:
                from pyarrow import fs as pafs

                filesystem, root = pafs.FileSystem.from_uri(key + "/")
                # the path of the netloc's root: "" (file, hdfs) or "bucket" (s3, gs)
                found = (filesystem, root.rstrip("/"))
            _filesystems[key] = found
    return found


class Stat(NamedTuple):
    """What kseg reads of a stat result."""

    st_mode: int
    st_size: int


class UriPath:
    """A file or directory named by a URI: the subset of :class:`pathlib.Path` kseg's storage
    layer uses (``name``, ``parent``, ``/``, ``suffix``, ``with_suffix``, ``exists``,
    ``is_dir``, ``is_file``, ``iterdir``, ``stat``), plus :meth:`open_input`. Plain data
    (pickled to Spark's executors as its string); no ``__fspath__``, so no local-file function
    takes it by mistake.

    A listing (:meth:`iterdir`, :meth:`listdir`) remembers each child's type and size, so the
    children a partition listing names are not asked again one by one (a HEAD request each on
    object storage); :meth:`open_input` always asks afresh."""

    __slots__ = ("_key", "_path", "_info", "_children")

    def __init__(self, uri: str, *, _info: Stat | None = None) -> None:
        self._key, self._path = _split(uri)
        self._info = _info
        self._children: dict[str, Stat] | None = None

    @classmethod
    def _make(cls, key: str, path: str, info: Stat | None = None) -> UriPath:
        self = cls.__new__(cls)
        self._key, self._path, self._info, self._children = key, path, info, None
        return self

    # --- names ---------------------------------------------------------------------------
    def __str__(self) -> str:
        return self._key + (self._path or "/")

    def __repr__(self) -> str:
        return f"UriPath({str(self)!r})"

    def __reduce__(self):
        return (UriPath, (str(self),))

    def __eq__(self, other) -> bool:
        return isinstance(other, UriPath) and (self._key, self._path) == (other._key, other._path)

    def __lt__(self, other: UriPath) -> bool:
        return (self._key, self._path) < (other._key, other._path)

    def __hash__(self) -> int:
        return hash((self._key, self._path))

    def resolve(self) -> UriPath:
        """A URI names one object already (as Path.resolve for a local path)."""
        return self

    @property
    def name(self) -> str:
        return self._path.rsplit("/", 1)[-1]

    @property
    def suffix(self) -> str:
        name = self.name
        i = name.rfind(".")
        return name[i:] if 0 < i < len(name) - 1 else ""

    @property
    def parent(self) -> UriPath:
        return UriPath._make(self._key, self._path.rsplit("/", 1)[0]) if self._path else self

    def __truediv__(self, name: str) -> UriPath:
        name = str(name).strip("/")
        known = self._children.get(name) if self._children is not None else None
        return UriPath._make(self._key, f"{self._path}/{name}", known)

    def with_suffix(self, suffix: str) -> UriPath:
        name = self.name
        stem = name[: len(name) - len(self.suffix)] if self.suffix else name
        return self.parent / (stem + suffix)

    @property
    def fs_path(self) -> str:
        """The path the pyarrow filesystem knows this file by."""
        prefix = _filesystem(self._key)[1]
        return (prefix + self._path) if prefix else (self._path or "/")

    @property
    def filesystem(self):
        return _filesystem(self._key)[0]

    # --- what is there ---------------------------------------------------------------------
    def _error(self, exc: OSError) -> OSError:
        """pyarrow's error, naming this URI as a local error names its path."""
        code = exc.errno or (errno.ENOENT if isinstance(exc, FileNotFoundError) else errno.EIO)
        why = str(exc).split(". Detail:")[0] if code == errno.EIO else None
        out = type(exc)(code, why or _strerror(code), str(self))
        return out

    def stat(self) -> Stat:
        """Type and size (raises FileNotFoundError when nothing is there). From the parent's
        listing when it gave them."""
        if self._info is not None:
            return self._info
        from pyarrow import fs as pafs

        try:
            info = self.filesystem.get_file_info(self.fs_path)
        except OSError as exc:
            raise self._error(exc) from None
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(errno.ENOENT, _strerror(errno.ENOENT), str(self))
        return _stat(info)

    def exists(self) -> bool:
        try:
            self.stat()
        except OSError:
            return False
        return True

    def is_dir(self) -> bool:
        try:
            return st.S_ISDIR(self.stat().st_mode)
        except OSError:
            return False

    def is_file(self) -> bool:
        try:
            return st.S_ISREG(self.stat().st_mode)
        except OSError:
            return False

    def _list(self) -> dict[str, Stat]:
        from pyarrow import fs as pafs

        try:
            infos = self.filesystem.get_file_info(pafs.FileSelector(self.fs_path))
        except OSError as exc:
            raise self._error(exc) from None
        children = {info.base_name: _stat(info) for info in infos}
        self._children = children
        return children

    def listdir(self) -> list[str]:
        """The names in this directory (unordered, as os.listdir)."""
        return list(self._list())

    def iterdir(self) -> Iterator[UriPath]:
        for name, info in self._list().items():
            yield UriPath._make(self._key, f"{self._path}/{name}", info)

    # --- reading ---------------------------------------------------------------------------
    def open_input(self):
        """(pyarrow RandomAccessFile, size) of this regular file: a directory or anything else
        is refused as a local one is (kseg.storage.file_errors.NotRegularFileError)."""
        from pyarrow import fs as pafs

        filesystem, path = self.filesystem, self.fs_path
        try:
            info = filesystem.get_file_info(path)
            if info.type == pafs.FileType.NotFound:
                raise FileNotFoundError(errno.ENOENT, _strerror(errno.ENOENT), str(self))
            if info.type != pafs.FileType.File:
                what = "a directory" if info.type == pafs.FileType.Directory else "not a file"
                raise NotRegularFileError(
                    errno.EINVAL, f"{what}, not a regular file: not read", str(self)
                )
            f = filesystem.open_input_file(path)
            return f, f.size()
        except (FileNotFoundError, NotRegularFileError):
            raise
        except OSError as exc:
            raise self._error(exc) from None

    def size_now(self) -> int | None:
        """The size now, asked afresh (None: gone or unreadable)."""
        try:
            return UriPath._make(self._key, self._path).stat().st_size
        except OSError:
            return None

    def read_bytes(self, limit: int = MAX_WHOLE_READ) -> bytes:
        """The whole file, refused (OSError EFBIG) above ``limit`` bytes."""
        f, size = self.open_input()
        with f:
            if size > limit:
                raise OSError(
                    errno.EFBIG,
                    f"{size} bytes: larger than the {limit >> 20} MiB kseg reads whole from a URI",
                    str(self),
                )
            try:
                data = f.read_at(size, 0) if size else b""
            except OSError as exc:
                raise self._error(exc) from None
        return bytes(data)


def _strerror(code: int) -> str:
    import os

    return os.strerror(code)


def _stat(info) -> Stat:
    from pyarrow import fs as pafs

    if info.type == pafs.FileType.Directory:
        return Stat(st.S_IFDIR | 0o755, 0)
    if info.type == pafs.FileType.File:
        return Stat(st.S_IFREG | 0o644, info.size or 0)
    return Stat(0, 0)
