"""Where segment files live: local paths (memory-mapped) or URIs through pyarrow.fs.

`hdfs://` needs a Hadoop client (libhdfs) on the executors, `s3://` credentials from the usual AWS
chain (environment, profile, instance role), `gs://` from Google's default credentials. Local
paths (including NFS/FUSE mounts) need nothing.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..storage.mapped import mapped


def is_uri(path: str) -> bool:
    """Plain paths are memory-mapped; anything with a scheme (file:// included, which is how the
    tests exercise this path) goes through pyarrow.fs."""
    return "://" in path


@dataclass(frozen=True)
class Entry:
    path: str
    name: str
    is_dir: bool
    size: int


def _arrow_fs(uri: str):
    from pyarrow import fs as pafs

    return pafs.FileSystem.from_uri(uri)


def list_dir(path: str) -> list[Entry]:
    if not is_uri(path):
        p = Path(path)
        return [
            Entry(str(c), c.name, c.is_dir(), c.stat().st_size if c.is_file() else 0)
            for c in sorted(p.iterdir())
        ]
    from pyarrow import fs as pafs

    filesystem, base = _arrow_fs(path)
    scheme = path.split("://", 1)[0]
    out = []
    for info in filesystem.get_file_info(pafs.FileSelector(base)):
        full = f"{scheme}://{info.path}" if not info.path.startswith(scheme) else info.path
        out.append(
            Entry(full, info.base_name, info.type == pafs.FileType.Directory, info.size or 0)
        )
    return sorted(out, key=lambda e: e.name)


def is_dir(path: str) -> bool:
    if not is_uri(path):
        return Path(path).is_dir()
    from pyarrow import fs as pafs

    filesystem, base = _arrow_fs(path)
    return filesystem.get_file_info(base).type == pafs.FileType.Directory


def read_bytes(path: str, start: int = 0, length: int | None = None) -> bytes:
    """A whole small file, or one byte range of a large one."""
    if not is_uri(path):
        with open(path, "rb") as f:
            f.seek(start)
            return f.read() if length is None else f.read(length)
    filesystem, base = _arrow_fs(path)
    with filesystem.open_input_file(base) as f:
        if length is None:
            length = f.size() - start
        return f.read_at(length, start)


@contextmanager
def open_range(path: str, start: int, end: int):
    """(buffer, offset of buffer[0] in the file) covering [start, end): a map for local files,
    just that range read into memory for remote ones (ranges end at batch boundaries)."""
    if not is_uri(path):
        with mapped(path) as buf:
            yield buf, 0
        return
    yield read_bytes(path, start, end - start), start
