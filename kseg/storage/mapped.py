"""Reading files safely: only regular files, and never a mapping that can fault.

A `.log` is read through a :class:`ShadowMap`: an anonymous, private map of the file's size,
filled with ``pread`` just ahead of the walk (``ensure``) and released behind it. Callers index it
like the file's bytes at absolute positions (``buf[pos]``, ``struct.unpack_from``,
``memoryview``) exactly as they did a map of the file, but a file that shrinks while it is read
(a broker's retention, an operator's ``truncate``) gives a short read and a
:class:`FileShrankError` naming the byte, where touching a truncated page of a file map kills the
process with SIGBUS. Reading only what the walk reaches also bounds the resident memory.

The pages a walk has passed are not freed and faulted in again ahead of it (the kernel would
zero every new page before the read copies into it: a third of a walk's time): on Linux they
are moved, still resident, to where the next read lands (``mremap`` with MREMAP_DONTUNMAP, which
leaves the passed range mapped and empty: touching it reads zeros, as a released page did).
A walk front to back thus reuses one window's worth of memory from start to end.

Named pipes, devices and sockets are refused before they are opened (a FIFO would block the
open or the read forever): :class:`NotRegularFileError`.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kseg.storage.file_errors import FileShrankError, NotRegularFileError
from kseg.storage.kernel_walk import ROW
from kseg.storage.links import mode_kind
from kseg.storage.uri import UriPath

_PAGE = mmap.PAGESIZE
FILL_STEP = 8 << 20  # read ahead of the walk in pieces of this size
# the kernel's walk reads its window in pieces of this size, each walked (CRC) while it is still
# in the CPU's cache: 2 GiB of 16 KiB batches, 0.45 -> 0.36 CPU s of read + CRC (docs/benchmarks-history.md)
READ_PIECE = 256 << 10
KEEP_BEHIND = 16 << 20  # release what the walk has passed beyond this much
MOVE_BLOCK = 2 << 20  # passed pages are moved ahead in aligned blocks of this size (a huge page)
_MAP_NORESERVE = 0x4000 if sys.platform.startswith("linux") else 0  # not in mmap before 3.13
_MREMAP_MAYMOVE, _MREMAP_FIXED, _MREMAP_DONTUNMAP = 1, 2, 4  # linux/mman.h
_mremap = None  # libc's mremap once looked up (ctypes: imported only by a walk that moves pages)


def _mremap_call():
    """libc's ``mremap`` (ctypes), or False where there is none (not Linux, no libc)."""
    global _mremap
    if _mremap is None:
        _mremap = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                fn = ctypes.CDLL(None, use_errno=True).mremap
                fn.restype = ctypes.c_void_p
                size, addr = ctypes.c_size_t, ctypes.c_void_p
                fn.argtypes = (addr, size, size, ctypes.c_int, addr)
                _mremap = fn
            except (ImportError, OSError, AttributeError):
                pass
    return _mremap


def open_regular(path: str | Path) -> int:
    """Open ``path`` read-only, only if it is a regular file: checked with stat before the open
    (a FIFO's open blocks), opened non-blocking and checked again (it may have been swapped)."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(
            errno.EINVAL, f"{mode_kind(mode)}, not a regular file: not read", str(path)
        )
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(
                errno.EINVAL, f"{mode_kind(mode)}, not a regular file: not read", str(path)
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_file(path) -> bytes:
    """The whole content of a regular file (indexes, checkpoints: small files); a URI's is
    refused above kseg.storage.uri.MAX_WHOLE_READ."""
    remote = _remote(path)
    if remote is not None:
        return remote.read_bytes()
    fd = open_regular(path)
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


class FileSlices:
    """A regular file's bytes read by ``pread`` when sliced (``buf[a:b]`` -> bytes, as bytes
    slice), never whole: an index's entries are read where a lookup or a pass reaches them, so a
    4 GiB (sparse) `.index` costs what is looked at, not its size. Reads go through a window
    of WINDOW bytes (a pass entry by entry costs one read per window). A file that shrinks while
    it is read gives a :class:`FileShrankError` naming the byte, never a short answer."""

    WINDOW = 64 << 10

    def __init__(self, fd: int, size: int, path: str) -> None:
        self.fd, self.size, self.path = fd, size, path
        self._lo, self._win = 0, b""

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, key: slice) -> bytes:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("FileSlices takes plain slices")
        start, stop, _ = key.indices(self.size)
        if stop <= start:
            return b""
        lo, win = self._lo, self._win
        if lo <= start and stop <= lo + len(win):
            return win[start - lo : stop - lo]
        if stop - start <= self.WINDOW:
            end = min(self.size, start + self.WINDOW)
            self._lo, self._win = start, self._read(start, end)
            return self._win[: stop - start]
        return self._read(start, stop)

    def _read(self, start: int, stop: int) -> bytes:
        out = bytearray()
        while len(out) < stop - start:
            piece = os.pread(self.fd, stop - start - len(out), start + len(out))
            if not piece:
                raise FileShrankError(
                    self.path, start + len(out), self.size, os.fstat(self.fd).st_size
                )
            out += piece
        return bytes(out)

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:
            pass


def read_slices(path) -> bytes | FileSlices:
    """A file read in slices on demand (:class:`FileSlices`; b"" when empty). A URI's file is
    read whole (size checked first, kseg.storage.uri.MAX_WHOLE_READ)."""
    remote = _remote(path)
    if remote is not None:
        return remote.read_bytes()
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
    except BaseException:
        os.close(fd)
        raise
    if size == 0:
        os.close(fd)
        return b""
    return FileSlices(fd, size, str(path))


def holds(path, data: bytes, padded_to: int | None = None) -> bool:
    """Does the regular file ``path`` hold exactly ``data``, then zeros up to ``padded_to``
    bytes (when larger)? A size that differs answers at once; the bytes are compared in pieces,
    never read whole (an index kseg is about to replace may be 4 GiB)."""
    want = max(len(data), padded_to or 0)
    content = read_slices(path)
    try:
        if len(content) != want:
            return False
        step = 1 << 20
        for pos in range(0, want, step):
            piece = content[pos : pos + step]
            expected = data[pos : pos + step]
            if piece[: len(expected)] != expected or piece[len(expected) :].strip(b"\x00"):
                return False
        return True
    finally:
        if isinstance(content, FileSlices):
            content.close()


class ShadowMap(mmap.mmap):
    """The file's bytes at their absolute positions, read on demand (see the module docstring).
    Only [lo, hi) is valid: walkers call ``ensure(start, end)`` before touching an entry."""

    def __new__(cls, fd: int, size: int, path: str):
        self = super().__new__(
            cls,
            -1,
            size,
            flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE,
            prot=mmap.PROT_READ | mmap.PROT_WRITE,
        )
        self.fd, self.size, self.path = fd, size, path
        self.lo = self.hi = 0
        self._base = None  # the map's address, once pages are moved (``_recycle``)
        self._stale = 0  # [hi, _stale) holds moved pages not yet read into (old bytes)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            try:
                self.madvise(mmap.MADV_HUGEPAGE)  # fewer faults when filling
            except OSError:
                pass
        return self

    def ensure(self, start: int, end: int) -> int:
        """Make [start, end) readable (clamped to the size at open); returns the end of what is
        readable from ``start`` on, so a walker can skip the call until it passes it."""
        if start >= self.lo and end <= self.hi:
            return self.hi
        target = self._prepare(start, end)
        self._fill(self.hi, target)
        return self._commit(target)

    def read_walk(self, walk, start: int, end: int, walk_end: int, max_batches: int):
        """``ensure(start, end)`` with the kernel's header walk from ``start`` run behind each
        READ_PIECE it reads (``walk``: the kernel's ``read_walk``). Returns (rows, stop, reason,
        readable end): the kernel's ``walk`` over what is made readable, up to ``walk_end``
        (a batch that goes on past the read, inside ``walk_end``: reason 1, call again from
        stop). None when [start, end) is readable already or the map is closed: the caller
        goes the plain way (``ensure``, then the walk). What the kernel could not read is read
        again here, and a file that shrank raises as ``ensure`` does (the call's rows are
        dropped with it)."""
        if (start >= self.lo and end <= self.hi) or self.fd < 0:
            return None  # (a closed map: ensure says what that means)
        target = self._prepare(start, end)
        rows, stop, reason, got = walk(
            self.fd, self, self.hi, target, start, walk_end, max_batches, READ_PIECE
        )
        if got < target and len(rows) == max_batches * ROW.size and got > start:
            target = got  # the rows are full and the kernel read no further (not a short read)
        else:
            self._fill(got, target)
        return rows, stop, reason, self._commit(target)

    def _prepare(self, start: int, end: int) -> int:
        """Ready the window to be read up to the target it returns: a jump starts a new one at
        ``start``; moving forward, passed pages are moved ahead or let go."""
        if start < self.lo or start > self.hi:  # a jump: start a new window there
            self._release(self.lo, max(self.hi, self._stale))
            self.lo = self.hi = self._stale = start - start % _PAGE
        target = min(self.size, max(end, self.hi + FILL_STEP))
        # moving forward: what lies more than KEEP_BEHIND / 2 behind is moved to where the read
        # lands; what is left of it once more than KEEP_BEHIND lies behind is let go
        upto = start - KEEP_BEHIND // 2
        upto -= upto % _PAGE
        if upto > self.lo:
            self.lo = self._recycle(self.lo, upto, target)
            if start - self.lo > KEEP_BEHIND:
                self._release(self.lo, upto)
                self.lo = upto
        return target

    def _fill(self, pos: int, target: int) -> None:
        """Read [pos, target) into the map ([hi, pos) holds the file's bytes already)."""
        with memoryview(self) as mv:
            try:
                while pos < target:
                    n = self._read_into(mv[pos:target], pos)
                    if n <= 0:
                        self.hi = pos
                        raise FileShrankError(self.path, pos, self.size, self._size_now(pos))
                    pos += n
            except BaseException:
                if pos < self._stale:  # a read that stopped short: no old bytes past it
                    self._clear(mv, pos, self._stale)
                raise

    def _commit(self, target: int) -> int:
        """[hi, target) was read: make it readable, once the file is known to still hold it."""
        # A truncate racing a read can zero the tail of the page it cuts before the read copies
        # it: the bytes just read are only trusted if the file still holds them afterwards.
        try:
            now = os.fstat(self.fd).st_size
        except OSError:
            now = target
        if now < target:
            if target < self._stale:
                with memoryview(self) as mv:
                    self._clear(mv, target, self._stale)
            good = max(self.hi, min(now, target))
            raise FileShrankError(self.path, good, self.size, now)
        self.hi = target
        return target

    def data_region(self, start: int, end: int) -> tuple[int, int]:
        """The first range in [start, end) that may hold data, as (lo, hi): the file's holes
        (a sparse file's unwritten ranges, e.g. after `truncate -s 100G`) read as zeros and are
        skipped (``lseek`` SEEK_DATA/SEEK_HOLE); (end, end) when only holes are left. Without
        the file's hole map (a URI, a file system that has none) the whole of [start, end)."""
        if self.fd < 0 or not hasattr(os, "SEEK_DATA"):
            return start, end
        try:
            lo = os.lseek(self.fd, start, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data at or after start
                return end, end
            return start, end
        if lo >= end:
            return end, end
        try:
            hi = os.lseek(self.fd, lo, os.SEEK_HOLE)
        except OSError:
            hi = end
        return lo, max(lo + 1, min(hi, end))

    def covers(self, start: int, end: int) -> bool:
        """Is [start, end) inside the window read so far (and not released)?"""
        return self.lo <= start and end <= self.hi

    def read_range(self, start: int, end: int) -> bytes:
        """[start, end) read again from the file, as bytes of their own (for a batch kept after
        the walk has passed and released it): the walk's window is left as it is."""
        out = bytearray()
        while len(out) < end - start:
            piece = self._read(end - start - len(out), start + len(out))
            if not piece:
                now = self._size_now(start + len(out))
                raise FileShrankError(self.path, start + len(out), self.size, now)
            out += piece
        try:  # as in ensure: a truncate racing the read may have zeroed what it copied
            now = os.fstat(self.fd).st_size
        except OSError:
            now = end
        if now < end:
            raise FileShrankError(self.path, max(start, now), self.size, now)
        return bytes(out)

    # --- the file behind it (a local fd here; RemoteMap reads through pyarrow) --------------
    def _read_into(self, view: memoryview, pos: int) -> int:
        return os.preadv(self.fd, [view], pos)

    def _read(self, n: int, pos: int) -> bytes:
        if self.fd < 0:
            raise ValueError(f"{self.path} is closed")
        return os.pread(self.fd, n, pos)

    def _size_now(self, pos: int) -> int:
        try:
            return os.fstat(self.fd).st_size
        except OSError:
            return pos

    def __del__(self) -> None:
        # a map handed out without a with-block (read_batches) closes its file when it goes
        fd = getattr(self, "fd", -1)
        if fd >= 0:
            self.fd = -1  # first: see close()
            try:
                os.close(fd)
            except OSError:
                pass

    def _release(self, start: int, end: int) -> None:
        start -= start % _PAGE
        if end > start:
            self.madvise(mmap.MADV_DONTNEED, start, end - start)

    def _recycle(self, lo: int, upto: int, target: int) -> int:
        """Move the resident pages of [lo, upto) (passed by the walk) to where [hi, target) is
        about to be read, in whole MOVE_BLOCKs (aligned: every move stays inside one mapping
        of the kernel's, and huge pages move whole), so the read lands in memory already
        faulted in; the range they leave stays mapped, empty (reads zeros). Returns where
        the window now starts: past the blocks moved (the part of a block before them is
        released), or ``lo`` where nothing could move (the caller releases instead)."""
        block = MOVE_BLOCK
        src = -(-lo // block) * block
        dest = -(-max(self.hi, self._stale) // block) * block
        room = min(-(-target // block) * block, len(self) - len(self) % block) - dest
        n = min(upto - upto % block - src, room)
        n -= n % block
        if n <= 0:
            return lo
        fn = _mremap_call()
        if not fn:
            return lo
        if self._base is None:
            import ctypes

            probe = ctypes.c_char.from_buffer(self)
            self._base = ctypes.addressof(probe)
            del probe  # the export would keep the map from closing
        flags = _MREMAP_MAYMOVE | _MREMAP_FIXED | _MREMAP_DONTUNMAP
        base, done = self._base, 0
        while done < n:
            to = base + dest + done
            if fn(base + src + done, block, block, flags, to) != to:
                break  # MREMAP_DONTUNMAP needs Linux 5.7
            done += block
        if not done:
            return lo
        self._release(lo, src)
        self._stale = dest + done  # [hi, _stale): old bytes until the read lands there
        return src + done

    def _clear(self, mv: memoryview, start: int, end: int) -> None:
        """Zero [start, end) (moved pages a short read did not reach): beyond ``hi`` the map
        reads as zeros, as it did before any page was moved."""
        end = min(end, len(self))
        whole = -(-start // _PAGE) * _PAGE
        if whole < end:
            self._release(whole, end)
        if start < min(whole, end):
            mv[start : min(whole, end)] = bytes(min(whole, end) - start)
        self._stale = start

    def close(self) -> None:
        # The fd is forgotten before it is closed: a signal landing between the two (Ctrl-C's
        # Interrupted) would otherwise leave it to be closed twice, an EBADF that replaced the
        # interrupt (verify reported "unreadable: Bad file descriptor", 12 instead of 36), or
        # the close of another file that had reused the number meanwhile.
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)
        super().close()


class RemoteMap(ShadowMap):
    """A :class:`ShadowMap` filled from a file named by a URI (kseg.storage.uri): the same
    on-demand window, read by ranged reads through pyarrow (one request per FILL_STEP on object
    storage), never the whole file into memory."""

    read_walk = None  # read through pyarrow: the kernel's reads (pread) are not for it

    def __new__(cls, file, size: int, uri):
        self = super().__new__(cls, -1, size, str(uri))
        self.file, self.uri = file, uri
        return self

    def _read_into(self, view: memoryview, pos: int) -> int:
        if self.file is None:
            raise ValueError(f"{self.path} is closed")
        try:
            self.file.seek(pos)
            return self.file.readinto(view)
        except OSError as exc:
            raise self.uri._error(exc) from None

    def _read(self, n: int, pos: int) -> bytes:
        if self.file is None:
            raise ValueError(f"{self.path} is closed")
        try:
            return bytes(self.file.read_at(n, pos))
        except OSError as exc:
            raise self.uri._error(exc) from None

    def _size_now(self, pos: int) -> int:
        now = self.uri.size_now()
        return pos if now is None else now

    def __del__(self) -> None:
        if getattr(self, "file", None) is not None:
            try:
                self.file.close()
            except OSError:
                pass
            self.file = None

    def close(self) -> None:
        self.__del__()
        super().close()


def _remote(path) -> UriPath | None:
    """The URI behind ``path`` (a URI string, a UriPath, or a Segment of one); None for a local
    path (checked first: the common case pays one isinstance)."""
    if isinstance(path, Path):
        return None
    if isinstance(path, str):
        return UriPath(path) if "://" in path else None
    if isinstance(path, UriPath):
        return path
    local = os.fspath(path)  # a Segment stands for its .log
    return UriPath(local) if isinstance(local, str) and "://" in local else None


def _open(path, sequential: bool, limit: int | None = None) -> bytes | ShadowMap:
    """The file's reader: b"" when empty, a ShadowMap for a local file, a RemoteMap for a URI.
    ``limit``: the reader holds at most this many bytes (the file's first ones)."""
    remote = _remote(path)
    if remote is not None:
        f, size = remote.open_input()
        if size == 0:
            f.close()
            return b""
        try:
            return RemoteMap(f, size if limit is None else min(size, limit), remote)
        except BaseException:
            f.close()
            raise
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            os.close(fd)
            return b""
        if sequential and hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        return ShadowMap(fd, size if limit is None else min(size, limit), str(path))
    except BaseException:
        os.close(fd)
        raise


@contextmanager
def mapped(
    path, *, sequential: bool = False, limit: int | None = None
) -> Iterator[bytes | ShadowMap]:
    """The bytes of the regular file ``path`` (a local path or a URI) for the duration of the
    block, as a :class:`ShadowMap` (b"" for an empty file). Nothing is opened for writing.

    ``sequential``: the caller walks the file front to back (dump, verify): the kernel reads ahead
    aggressively. ``limit``: only the file's first ``limit`` bytes are seen (``len`` says so)."""
    mm = _open(path, sequential, limit)
    if isinstance(mm, bytes):  # empty
        yield mm
        return
    try:
        yield mm
    finally:
        try:
            mm.close()
        except BufferError:
            pass  # a caller still holds a view; the map closes when it is released


def open_mapped(path, limit: int | None = None) -> bytes | ShadowMap:
    """Like :func:`mapped`, without a block: the map (and its file) close when the last
    reference goes, e.g. the last batch view a caller keeps (kseg.read_batches)."""
    return _open(path, False, limit)


def map_file(path) -> bytes | mmap.mmap:
    """A read-only map of a small file read at random (an index: a lookup touches a few pages),
    closed when the last reference goes. Regular files only. A URI's file is read whole (size
    checked first): a few binary searches would cost as many requests."""
    remote = _remote(path)
    if remote is not None:
        return remote.read_bytes()
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        return b"" if size == 0 else mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
