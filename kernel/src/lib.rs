//! kseg's compiled kernel: the hot loops only, on Python buffers (bytes, mmap, memoryview)
//! without copies. Every rule and every error message stays in the Python core (kseg.format);
//! these functions either do the common case exactly as the core does, or say where they
//! stopped. Imported only through kseg/kernel.py.
//!
//! The kernel never aborts the process: no buffer's size comes from a count read from disk,
//! and every allocation whose size comes from the input is fallible (try_reserve; Python's
//! bytes through `py_bytes`). One that fails is Python's MemoryError (`no_memory`), which the
//! glue turns into the core's path or kseg's out-of-memory line, as the core would.

pub mod arrow;
pub mod codecs;
pub mod json_run;
pub mod layout;
pub mod records;
pub mod resync;
pub mod walk;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyBufferError, PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use records::{BatchInfo, Mode, NoMemory, Selection};
use walk::IndexState;

/// A C-contiguous byte buffer held for the duration of a call.
struct Bytes {
    buf: PyBuffer<u8>,
}

impl Bytes {
    fn get(obj: &Bound<'_, PyAny>) -> PyResult<Bytes> {
        let buf = PyBuffer::<u8>::get(obj)?;
        if !buf.is_c_contiguous() || buf.item_size() != 1 {
            return Err(PyBufferError::new_err(
                "kernel: need a contiguous byte buffer",
            ));
        }
        Ok(Bytes { buf })
    }

    fn slice(&self) -> &[u8] {
        let len = self.buf.len_bytes();
        if len == 0 {
            return &[];
        }
        // SAFETY: the buffer is C-contiguous with 1-byte items and `self.buf` keeps the export
        // (and so the memory) alive for as long as the returned slice borrows `self`. A writable
        // buffer is only read while the GIL is held (see `read_only`), so no Python code can
        // change it meanwhile.
        unsafe { std::slice::from_raw_parts(self.buf.buf_ptr() as *const u8, len) }
    }

    /// Safe to read with the GIL released: nobody can write through a read-only export.
    fn read_only(&self) -> bool {
        self.buf.readonly()
    }
}

/// Python's MemoryError for an allocation the kernel could not make.
fn no_memory(_: NoMemory) -> PyErr {
    PyMemoryError::new_err("kernel: out of memory")
}

/// `Vec::with_capacity(n)`, or MemoryError.
fn vec_with<T>(n: usize) -> Result<Vec<T>, NoMemory> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| NoMemory)?;
    Ok(v)
}

/// A Python bytes of `data`: PyBytes::new panics when Python cannot allocate (a PanicException,
/// an "internal error"); this raises Python's MemoryError.
fn py_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    // SAFETY: PyBytes_FromStringAndSize copies `data.len()` bytes from a valid slice and
    // returns a new reference or NULL with an exception set; the result is a bytes object.
    unsafe {
        let p = pyo3::ffi::PyBytes_FromStringAndSize(
            data.as_ptr() as *const std::ffi::c_char,
            data.len() as pyo3::ffi::Py_ssize_t,
        );
        Ok(Bound::from_owned_ptr_or_err(py, p)?.downcast_into_unchecked())
    }
}

/// Run `f` without the GIL when the data cannot change meanwhile.
fn maybe_detach<T: Send>(py: Python<'_>, ro: bool, f: impl FnOnce() -> T + Send) -> T {
    if ro {
        py.allow_threads(f)
    } else {
        f()
    }
}

fn clamp(v: i64, len: usize) -> usize {
    if v < 0 {
        0
    } else {
        (v as u64).min(len as u64) as usize
    }
}

/// walk(buf, start, end, max_batches) -> (rows: bytes, stop: int, reason: int)
///
/// rows: native-endian int64 values, 11 per valid v2 batch, in the order of
/// kseg.format.log.walk_headers' tuples. reason: 0 reached end, 1 max_batches rows returned
/// (call again from stop), 2 the entry at stop is anything but a valid v2 batch.
#[pyfunction(name = "walk")]
fn py_walk<'py>(
    py: Python<'py>,
    buf: &Bound<'py, PyAny>,
    start: i64,
    end: i64,
    max_batches: usize,
) -> PyResult<(Bound<'py, PyBytes>, usize, u8)> {
    let b = Bytes::get(buf)?;
    let data = b.slice();
    let (start, end) = (clamp(start, data.len()), clamp(end, data.len()));
    // rows are bounded by the bytes present: a batch is at least 61 bytes
    let cap = ((end.saturating_sub(start)) / layout::HEADER_SIZE + 1).min(max_batches) * walk::ROW;
    let (rows, stop, reason) = maybe_detach(py, b.read_only(), || {
        // the walk appends at most `cap` values: none of its appends reallocates
        let mut rows: Vec<i64> = vec_with(cap)?;
        let (stop, reason) = walk::walk(data, start, end, max_batches, &mut rows);
        Ok((rows, stop, reason))
    })
    .map_err(no_memory)?;
    // SAFETY: the i64s' own bytes, native-endian (what to_ne_bytes gives), borrowed from `rows`
    // for the copy into the bytes object: no second buffer and per-value copy.
    let raw = unsafe { std::slice::from_raw_parts(rows.as_ptr() as *const u8, rows.len() * 8) };
    Ok((py_bytes(py, raw)?, stop, reason))
}

/// read_walk(fd, buf, read_from, read_to, walk_from, walk_end, max_batches, piece)
/// -> (rows, stop, reason, read_end)
///
/// Read the file `fd`'s [read_from, read_to) into the writable `buf` at the same positions,
/// `piece` bytes per pread, and walk as `walk(buf, walk_from, walk_end, max_batches)` does
/// behind each piece (walk::read_walk). read_end < read_to: the rows filled up (reason 1), or
/// a read returned nothing or failed there (reason 1, or 2 when the walk had stopped at an
/// entry before); the caller reads from read_end itself. The GIL is held throughout: the
/// buffer is written, and kseg walks in processes, not threads.
#[pyfunction(name = "read_walk")]
#[allow(clippy::too_many_arguments)]
fn py_read_walk<'py>(
    py: Python<'py>,
    fd: i32,
    buf: &Bound<'py, PyAny>,
    read_from: i64,
    read_to: i64,
    walk_from: i64,
    walk_end: i64,
    max_batches: usize,
    piece: usize,
) -> PyResult<(Bound<'py, PyBytes>, usize, u8, usize)> {
    use std::os::fd::BorrowedFd;
    let b = Bytes::get(buf)?;
    if b.read_only() {
        return Err(PyBufferError::new_err(
            "kernel: read_walk needs a writable buffer",
        ));
    }
    if fd < 0 {
        return Err(PyValueError::new_err(
            "kernel: read_walk needs an open file",
        ));
    }
    let len = b.buf.len_bytes();
    let data: &mut [u8] = if len == 0 {
        &mut []
    } else {
        // SAFETY: a writable, C-contiguous export of 1-byte items kept alive by `b` for the
        // call; the GIL is held throughout, so no Python code reads or writes it meanwhile.
        unsafe { std::slice::from_raw_parts_mut(b.buf.buf_ptr() as *mut u8, len) }
    };
    // SAFETY: the caller's open fd (a ShadowMap's, open while the map is), borrowed for the
    // call; the File reads through a duplicate of it, which is its own to close.
    let file = match unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned() {
        Ok(owned) => std::fs::File::from(owned),
        // no fd to spare (EMFILE), or none there: nothing read, "call again"; the caller reads
        // [read_from, read_to) itself and says what the fd's trouble is
        Err(_) => {
            return Ok((
                py_bytes(py, &[])?,
                clamp(walk_from, len),
                walk::STOP_LIMIT,
                clamp(read_from, len),
            ))
        }
    };
    let (read_from, read_to) = (clamp(read_from, len), clamp(read_to, len));
    let (walk_from, walk_end) = (clamp(walk_from, len), clamp(walk_end, len));
    let cap =
        (walk_end.saturating_sub(walk_from) / layout::HEADER_SIZE + 1).min(max_batches) * walk::ROW;
    // the walk appends at most `cap` values: none of its appends reallocates
    let mut rows: Vec<i64> = vec_with(cap).map_err(no_memory)?;
    let rw = walk::read_walk(
        &file,
        data,
        read_from,
        read_to,
        walk_from,
        walk_end,
        max_batches,
        piece,
        &mut rows,
    );
    // SAFETY: as in py_walk, the i64s' own bytes for the copy into the bytes object
    let raw = unsafe { std::slice::from_raw_parts(rows.as_ptr() as *const u8, rows.len() * 8) };
    Ok((py_bytes(py, raw)?, rw.stop, rw.reason, rw.read_end))
}

/// plain_run(rows, base_offset, prev_last, want_epoch or None, epoch_next, stop_at_producer)
/// -> (n, last_offset, max_timestamp)
///
/// How many leading walk rows need no look from kseg.verify.segment.scan_segment's per-batch
/// checks (see walk::plain_run); the last of them's last_offset (prev_last when n is 0) and
/// their largest max_timestamp (-1 when n is 0).
#[pyfunction(name = "plain_run")]
fn py_plain_run(
    rows: &Bound<'_, PyAny>,
    base_offset: i64,
    prev_last: i64,
    want_epoch: Option<i64>,
    epoch_next: i64,
    stop_at_producer: bool,
) -> PyResult<(usize, i64, i64)> {
    let b = Bytes::get(rows)?;
    let p = walk::PlainRun {
        base_offset,
        prev_last,
        want_epoch,
        epoch_next,
        stop_at_producer,
    };
    Ok(walk::plain_run(b.slice(), &p))
}

/// index_add(rows, state) -> (consumed, state, offset_index_bytes, time_index_bytes)
///
/// Kafka's index-append rule (kseg.format.index_rule.IndexBuilder.add) over walk rows.
/// state: (base_offset, interval, valid_bytes, last_entry_pos, last_index_offset or None,
/// last_time_ts, max_timestamp, max_timestamp_offset). Stops early (consumed < rows) at a row
/// the Python builder must handle itself.
#[pyfunction(name = "index_add")]
#[allow(clippy::type_complexity)]
fn py_index_add<'py>(
    py: Python<'py>,
    rows: &Bound<'py, PyAny>,
    state: (i64, i64, i64, i64, Option<i64>, i64, i64, i64),
) -> PyResult<(
    usize,
    (i64, i64, i64, i64, Option<i64>, i64, i64, i64),
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
)> {
    let b = Bytes::get(rows)?;
    let raw = b.slice();
    let mut st = IndexState {
        base_offset: state.0,
        interval: state.1,
        valid_bytes: state.2,
        last_entry_pos: state.3,
        last_index_offset: state.4,
        last_time_ts: state.5,
        max_timestamp: state.6,
        max_timestamp_offset: state.7,
    };
    // room for an entry of each index per row: none of the appends reallocates
    let row_bytes = walk::ROW * 8;
    let n = raw.len() / row_bytes;
    let (mut off, mut time) = (
        vec_with(n * 8).map_err(no_memory)?,
        vec_with(n * 12).map_err(no_memory)?,
    );
    let mut consumed = 0;
    for row in raw.chunks_exact(row_bytes) {
        let v = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&row[i * 8..i * 8 + 8]);
            i64::from_ne_bytes(a)
        };
        if !st.add(v(4), v(5), v(1), &mut off, &mut time) {
            break;
        }
        consumed += 1;
    }
    let out = (
        st.base_offset,
        st.interval,
        st.valid_bytes,
        st.last_entry_pos,
        st.last_index_offset,
        st.last_time_ts,
        st.max_timestamp,
        st.max_timestamp_offset,
    );
    Ok((consumed, out, py_bytes(py, &off)?, py_bytes(py, &time)?))
}

fn mode_of(mode: &str) -> PyResult<Mode> {
    Mode::parse(mode).ok_or_else(|| {
        PyValueError::new_err(format!("kernel: payload mode {mode:?} is not compiled"))
    })
}

/// decompress(cid, data, limit) -> bytes | None
///
/// `data` decompressed by the kernel's codecs (codecs.rs) as kseg.format.compression.decompress
/// (cid, data, limit) returns it, or None wherever the core raises (or might do anything else):
/// for the differential tests; the Spark decoder calls the codecs inside Records.walk.
#[pyfunction(name = "decompress")]
fn py_decompress<'py>(
    py: Python<'py>,
    cid: u8,
    data: &Bound<'py, PyAny>,
    limit: usize,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let d = Bytes::get(data)?;
    let input = d.slice();
    let mut codecs = codecs::Codecs::default();
    let out = maybe_detach(py, d.read_only(), || {
        codecs.decompress(cid, input, limit).map(<[u8]>::to_vec)
    });
    out.map(|o| py_bytes(py, &o)).transpose()
}

/// batch_json(buf, position, file_json, mode) -> bytes | None
///
/// The JSON lines of every record of the uncompressed v2 batch at `position`, or None when the
/// batch is anything else (compressed, torn, any lie in its records): the Python core decodes it.
/// The CRC is not checked here (dump shows records of a batch whose CRC is wrong).
#[pyfunction(name = "batch_json")]
fn py_batch_json<'py>(
    py: Python<'py>,
    buf: &Bound<'py, PyAny>,
    position: i64,
    file_json: &[u8],
    mode: &str,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let mode = mode_of(mode)?;
    let b = Bytes::get(buf)?;
    let data = b.slice();
    if position < 0 {
        return Ok(None);
    }
    let pos = position as usize;
    let out = maybe_detach(py, b.read_only(), || {
        let (h, size) = walk::v2_batch(data, pos, data.len())?;
        if h.has(layout::ATTR_COMPRESSION) {
            return None;
        }
        let info = BatchInfo::of(&h);
        let mut out = Vec::new();
        let _ = out.try_reserve(size.saturating_mul(2)); // a hint: each line reserves its room
        Some(
            records::records_json(
                data,
                pos + layout::HEADER_SIZE,
                pos + size,
                &info,
                file_json,
                mode,
                &mut out,
            )
            .map(|r| r.map(|_| out)),
        )
    });
    match out {
        None | Some(Ok(None)) => Ok(None),
        Some(Ok(Some(o))) => Ok(Some(py_bytes(py, &o)?)),
        Some(Err(e)) => Err(no_memory(e)),
    }
}

/// records_json(data, count, base_offset, base_timestamp, log_append_time, base_sequence,
/// file_json, mode) -> bytes | None
///
/// The same for records already decompressed by the Python core (its bounded codecs):
/// `data` holds exactly the records. base_sequence: the batch's (records get -1 when it is < 0).
#[pyfunction(name = "records_json")]
#[allow(clippy::too_many_arguments)]
fn py_records_json<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    count: i64,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
    base_sequence: i64,
    file_json: &[u8],
    mode: &str,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let mode = mode_of(mode)?;
    let b = Bytes::get(data)?;
    let d = b.slice();
    let info = BatchInfo {
        count,
        base_offset,
        base_timestamp,
        log_append_time,
        base_sequence,
    };
    let out = maybe_detach(py, b.read_only(), || {
        let mut out = Vec::new();
        let _ = out.try_reserve(d.len().saturating_mul(2)); // a hint: each line reserves its room
        records::records_json(d, 0, d.len(), &info, file_json, mode, &mut out)
            .map(|r| r.map(|_| out))
    })
    .map_err(no_memory)?;
    out.map(|o| py_bytes(py, &o)).transpose()
}

/// `kseg dump -f json`'s record lines for one file: its name (as JSON), payload mode and
/// record selection, fixed; `render` then takes one batch's records at a time.
#[pyclass(frozen, module = "kseg._kernel")]
struct JsonRecords {
    file_json: Vec<u8>,
    mode: Mode,
    sel: Selection,
    /// `run`'s output buffer, kept between calls: a fresh one each call cost a page fault and
    /// a zeroed page per 4 KiB of output (~10% of a JSON dump). Never larger than a run's cap.
    scratch: std::sync::Mutex<Vec<u8>>,
}

#[pymethods]
impl JsonRecords {
    /// JsonRecords(file_json, mode, from_offset, to_offset, from_time, to_time)
    #[new]
    fn new(
        file_json: Vec<u8>,
        mode: &str,
        from_offset: Option<i64>,
        to_offset: Option<i64>,
        from_time: Option<i64>,
        to_time: Option<i64>,
    ) -> PyResult<JsonRecords> {
        Ok(JsonRecords {
            file_json,
            mode: mode_of(mode)?,
            sel: Selection {
                from_offset,
                to_offset,
                from_time,
                to_time,
            },
            scratch: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// render(data, start, end, count, base_offset, base_timestamp, log_append_time,
    /// base_sequence, done, validated, max_records, max_out, step=0, hpos=0)
    /// -> None | (lines, next_start, next_done, emitted, lo, hi, next_step, next_hpos)
    ///
    /// The lines of the selected records in `data[start:end]` (an uncompressed batch's records
    /// in the segment, or a compressed one's decompressed by the core), `done` of the batch's
    /// `count` records being behind `start`. Stops once the lines reach `max_out` bytes:
    /// next_start >= 0 then says where to call again (with next_done, next_step, next_hpos,
    /// validated=True); -1: the batch is finished (its end, a record past to_offset, or
    /// max_records shown). A line longer than a part may stop part-way (the part
    /// then does not end with a newline): next_step > 0 says where in the line of the record
    /// at next_start the next call goes on. lo, hi: the smallest and largest offset shown, or
    /// None. None: the records are not all valid (checked to the end of the batch unless
    /// `validated`): the core takes the whole batch. MemoryError: no room for the lines.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    #[pyo3(signature = (
        data, start, end, count, base_offset, base_timestamp, log_append_time, base_sequence,
        done, validated, max_records, max_out, step=0, hpos=0
    ))]
    fn render<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        start: i64,
        end: i64,
        count: i64,
        base_offset: i64,
        base_timestamp: i64,
        log_append_time: Option<i64>,
        base_sequence: i64,
        done: i64,
        validated: bool,
        max_records: Option<u64>,
        max_out: usize,
        step: usize,
        hpos: usize,
    ) -> PyResult<
        Option<(
            Bound<'py, PyBytes>,
            i64,
            i64,
            u64,
            Option<i128>,
            Option<i128>,
            usize,
            usize,
        )>,
    > {
        let b = Bytes::get(data)?;
        let d = b.slice();
        if start < 0 || end < start || end as u64 > d.len() as u64 {
            return Ok(None);
        }
        let (start, end) = (start as usize, end as usize);
        let info = BatchInfo {
            count,
            base_offset,
            base_timestamp,
            log_append_time,
            base_sequence,
        };
        let (file_json, mode, sel) = (&self.file_json[..], self.mode, &self.sel);
        let got = maybe_detach(py, b.read_only(), || {
            // sized from the bytes present, and never much beyond max_out
            let cap = ((end - start).saturating_mul(2) + 256).min(max_out.saturating_add(1 << 16));
            let mut out = vec_with(cap)?;
            let part = records::render_part(
                d,
                start,
                end,
                &info,
                done,
                records::Within { step, hpos },
                validated,
                file_json,
                mode,
                sel,
                max_records,
                max_out,
                &mut out,
            )?;
            Ok(part.map(|p| (out, p)))
        })
        .map_err(no_memory)?;
        let Some((out, part)) = got else {
            return Ok(None);
        };
        let (next, next_done, within) = match part.resume {
            Some((p, n, w)) => (p as i64, n, w),
            None => (-1, count, records::Within::default()),
        };
        Ok(Some((
            py_bytes(py, &out)?,
            next,
            next_done,
            part.emitted,
            part.lo,
            part.hi,
            within.step,
            within.hpos,
        )))
    }

    /// run(buf, start, end, batch_file, batch_tail, max_records, max_out, batches_only)
    /// -> (lines, stop, reason, emitted, lo, hi)
    ///
    /// The batch and record lines of the plain v2 batches from `start` (see json_run.rs): each
    /// batch line's file is `batch_file` (JSON) followed by `batch_tail` (`,"key":value`...).
    /// reason: 0 reached end, 1 the part is full (call again from stop), 2 the core takes the
    /// entry at stop, 3 max_records shown. emitted: record lines (batch lines with
    /// batches_only); lo, hi: the smallest and largest offset shown, or None.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn run<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        buf: &Bound<'py, PyAny>,
        start: i64,
        end: i64,
        batch_file: &[u8],
        batch_tail: &[u8],
        max_records: Option<u64>,
        max_out: usize,
        batches_only: bool,
    ) -> PyResult<(Lines, usize, u8, u64, Option<i128>, Option<i128>)> {
        let this = slf.get();
        let b = Bytes::get(buf)?;
        let d = b.slice();
        let (start, end) = (clamp(start, d.len()), clamp(end, d.len()));
        // (a second thread in the same object meanwhile just starts with an empty one)
        let mut out = this
            .scratch
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        let (file_json, mode, sel) = (&this.file_json[..], this.mode, &this.sel);
        let text = json_run::BatchText {
            head: batch_file,
            tail: batch_tail,
        };
        let (out, r) = maybe_detach(py, b.read_only(), move || {
            // sized from the bytes present, and never much beyond what a run may hold
            let cap = (end.saturating_sub(start).saturating_mul(2) + 256)
                .min(max_out.saturating_mul(2).saturating_add(1 << 16));
            out.clear();
            if out.capacity() > cap.max(1 << 16) * 2 {
                out = Vec::new(); // a smaller run after a larger one: do not hold the larger room
            }
            records::room(&mut out, cap)?;
            let r = json_run::run(
                d,
                start,
                end,
                file_json,
                &text,
                mode,
                sel,
                max_records,
                max_out,
                batches_only,
                &mut out,
            )?;
            Ok((out, r))
        })
        .map_err(no_memory)?;
        let lines = Lines {
            data: std::sync::Mutex::new(out),
            owner: Some(slf.clone().unbind()),
        };
        Ok((lines, r.stop, r.reason, r.emitted, r.lo, r.hi))
    }
}

/// Lines a JsonRecords ``run`` rendered, still in the kernel's buffer: ``bytes(lines)`` copies
/// them out; ``write_stdout()`` writes them to the process's standard output (descriptor 1)
/// from that buffer, without the copy into a Python bytes (~9% of a JSON dump), and hands the
/// buffer back to its JsonRecords for the next run (no fresh pages to fault in). Written once:
/// afterwards it is empty.
#[pyclass(frozen, module = "kseg._kernel")]
struct Lines {
    data: std::sync::Mutex<Vec<u8>>,
    owner: Option<Py<JsonRecords>>,
}

#[pymethods]
impl Lines {
    fn __len__(&self) -> usize {
        self.data.lock().map(|d| d.len()).unwrap_or(0)
    }

    fn __bytes__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        match self.data.lock() {
            Ok(d) => py_bytes(py, &d),
            Err(_) => py_bytes(py, b""),
        }
    }

    /// Write every byte to descriptor 1 (the caller has flushed what it buffered before them).
    /// An error is the OSError of the failed write (errno, strerror), as Python's own write
    /// raises it; a signal during a write runs Python's handler (an interrupt ends the write).
    fn write_stdout(&self, py: Python<'_>) -> PyResult<()> {
        let data = match self.data.lock() {
            Ok(mut d) => std::mem::take(&mut *d),
            Err(_) => return Ok(()),
        };
        let written = write_all_stdout(py, &data);
        self.give_back(data);
        written
    }
}

impl Lines {
    /// The buffer back to the JsonRecords that lent it (its next run reuses the pages).
    fn give_back(&self, mut data: Vec<u8>) {
        if let Some(owner) = &self.owner {
            if let Ok(mut s) = owner.get().scratch.lock() {
                if s.capacity() < data.capacity() {
                    data.clear();
                    *s = data;
                }
            }
        }
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let data = match self.data.get_mut() {
            Ok(d) => std::mem::take(d),
            Err(_) => return,
        };
        self.give_back(data);
    }
}

fn write_all_stdout(py: Python<'_>, mut rest: &[u8]) -> PyResult<()> {
    use std::io::{ErrorKind, Write};
    let stdout = std::io::stdout();
    while !rest.is_empty() {
        // Rust's stdout writes whole lines through to the descriptor (a LineWriter; every part
        // ends with a newline), so nothing is left in its buffer between calls
        let r = py.allow_threads(|| stdout.lock().write(rest));
        match r {
            Ok(0) => return Err(os_error(py, std::io::Error::from_raw_os_error(EIO))),
            Ok(n) => rest = &rest[n.min(rest.len())..],
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(os_error(py, e)),
        }
        py.check_signals()?;
    }
    py.allow_threads(|| stdout.lock().flush())
        .map_err(|e| os_error(py, e))
}

const EIO: i32 = 5;

/// The OSError Python's own write raises for `e`: OSError(errno, strerror), so the subclass for
/// the errno (BrokenPipeError...) with Python's text for the number.
fn os_error(py: Python<'_>, e: std::io::Error) -> PyErr {
    let Some(errno) = e.raw_os_error() else {
        return pyo3::exceptions::PyOSError::new_err(e.to_string());
    };
    let text = py
        .import("os")
        .and_then(|os| os.getattr("strerror"))
        .and_then(|f| f.call1((errno,)))
        .and_then(|t| t.extract::<String>())
        .unwrap_or_else(|_| e.to_string());
    pyo3::exceptions::PyOSError::new_err((errno, text))
}

/// CRC-32C (hardware where the CPU has it) of a buffer, for tests and benchmarks.
#[pyfunction(name = "crc32c")]
fn py_crc32c<'py>(py: Python<'py>, buf: &Bound<'py, PyAny>) -> PyResult<u32> {
    let b = Bytes::get(buf)?;
    let d = b.slice();
    Ok(maybe_detach(py, b.read_only(), || crate::walk::crc32c(d)))
}

/// resync_scan(buf, pos, end, last) -> int: the first position >= pos where the resync scan's
/// header-only prefilter holds (kseg.format.resync.scan_candidates), or -1.
#[pyfunction(name = "resync_scan")]
fn py_resync_scan<'py>(
    py: Python<'py>,
    buf: &Bound<'py, PyAny>,
    pos: i64,
    end: i64,
    last: i128,
) -> PyResult<i64> {
    let b = Bytes::get(buf)?;
    let d = b.slice();
    let (pos, end) = (clamp(pos, d.len()), clamp(end, d.len()));
    Ok(maybe_detach(py, b.read_only(), || {
        resync::scan(d, pos, end, last)
    }))
}

/// An output buffer the kernel filled, handed to pyarrow without a copy:
/// ``pa.foreign_buffer(b.address, b.size, base=b)``. Frozen: nothing can change or move the
/// memory while pyarrow (through `base`) keeps this object alive. Native-endian, as Arrow is.
#[pyclass(frozen, module = "kseg._kernel")]
struct Buf {
    data: BufData,
}

enum BufData {
    U8(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

#[pymethods]
impl Buf {
    #[getter]
    fn address(&self) -> usize {
        match &self.data {
            BufData::U8(v) => v.as_ptr() as usize,
            BufData::I32(v) => v.as_ptr() as usize,
            BufData::I64(v) => v.as_ptr() as usize,
        }
    }

    #[getter]
    fn size(&self) -> usize {
        match &self.data {
            BufData::U8(v) => v.len(),
            BufData::I32(v) => v.len() * 4,
            BufData::I64(v) => v.len() * 8,
        }
    }
}

fn buf(py: Python<'_>, data: BufData) -> PyResult<Py<Buf>> {
    Py::new(py, Buf { data })
}

/// Records of valid v2 batches -> the Spark source's `records` columns (see arrow.rs), for
/// kseg.spark.kernel_arrow.spark_records. One object per task; `take()` hands out a chunk's buffers.
#[pyclass(module = "kseg._kernel")]
struct Records {
    cols: arrow::Columns,
}

#[pymethods]
impl Records {
    /// Records(include_headers, segment_columns, include_control, from_time, to_time,
    /// from_offset, to_offset, shift, min_ms, max_ms, codec_names, max_decompressed=None):
    /// with max_decompressed (the core's bound) compressed batches are decompressed in the
    /// kernel (codecs.rs), without it walk() stops at each for the core's codecs.
    #[new]
    #[pyo3(signature = (
        include_headers, segment_columns, include_control, from_time, to_time, from_offset,
        to_offset, shift, min_ms, max_ms, codec_names, max_decompressed=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        include_headers: bool,
        segment_columns: bool,
        include_control: bool,
        from_time: Option<i64>,
        to_time: Option<i64>,
        from_offset: Option<i64>,
        to_offset: Option<i64>,
        shift: i64,
        min_ms: i64,
        max_ms: i64,
        codec_names: Vec<Vec<u8>>,
        max_decompressed: Option<usize>,
    ) -> Records {
        Records {
            cols: arrow::Columns::new(arrow::Options {
                include_headers,
                segment_columns,
                include_control,
                from_time,
                to_time,
                from_offset,
                to_offset,
                shift,
                min_ms,
                max_ms,
                codec_names,
                max_decompressed,
            }),
        }
    }

    /// Rows held.
    #[getter]
    fn rows(&self) -> usize {
        self.cols.rows
    }

    /// walk(buf, start, end, max_rows) -> (stop, reason): decode the valid uncompressed v2
    /// batches from `start` (0 reached end, 1 holds max_rows rows or more, 2 the Python decoder
    /// takes the entry at stop, 3 the compressed batch at stop (one the kernel did not
    /// decompress itself): hand its records to decompressed(), 4 done: the batch at stop starts
    /// past to_offset).
    fn walk(
        &mut self,
        py: Python<'_>,
        buf: &Bound<'_, PyAny>,
        start: i64,
        end: i64,
        max_rows: usize,
    ) -> PyResult<(usize, u8)> {
        let b = Bytes::get(buf)?;
        let data = b.slice();
        let (start, end) = (clamp(start, data.len()), clamp(end, data.len()));
        let cols = &mut self.cols;
        Ok(maybe_detach(py, b.read_only(), || {
            cols.walk(data, start, end, max_rows)
        }))
    }

    /// decompressed(buf, position, data) -> bool: add the records of the compressed batch at
    /// `position`, decompressed by the Python core into `data`; False: nothing added, the Python
    /// decoder takes the batch.
    fn decompressed(
        &mut self,
        py: Python<'_>,
        buf: &Bound<'_, PyAny>,
        position: i64,
        data: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let b = Bytes::get(buf)?;
        let d = Bytes::get(data)?;
        if position < 0 {
            return Ok(false);
        }
        let (bs, ds) = (b.slice(), d.slice());
        let cols = &mut self.cols;
        Ok(maybe_detach(py, b.read_only() && d.read_only(), || {
            cols.decompressed(bs, position as usize, ds)
        }))
    }

    /// take() -> dict: the rows held as Arrow buffers (Buf objects; validity None when every
    /// value is there, with its null count), and start a new chunk.
    fn take<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let opts = self.cols.opts.clone();
        let mut c = std::mem::replace(&mut self.cols, arrow::Columns::new(opts));
        self.cols.codecs = std::mem::take(&mut c.codecs); // buffers and contexts go on
        let out = PyDict::new(py);
        out.set_item("rows", c.rows)?;
        let bits = |py: Python<'py>, b: arrow::Bits| -> PyResult<(Option<Py<Buf>>, usize)> {
            let unset = b.unset();
            if unset == 0 {
                Ok((None, 0))
            } else {
                Ok((Some(buf(py, BufData::U8(b.bytes))?), unset))
            }
        };
        let binary = |py: Python<'py>, b: arrow::Binary| -> PyResult<Bound<'py, PyAny>> {
            let (valid, nulls) = bits(py, b.valid)?;
            (
                valid,
                buf(py, BufData::I32(b.offsets))?,
                buf(py, BufData::U8(b.data))?,
                nulls,
            )
                .into_pyobject(py)
                .map(|t| t.into_any())
        };
        out.set_item("key", binary(py, c.key)?)?;
        out.set_item("value", binary(py, c.value)?)?;
        out.set_item("offset", buf(py, BufData::I64(c.offset))?)?;
        out.set_item("timestamp", buf(py, BufData::I64(c.timestamp))?)?;
        out.set_item("timestampType", buf(py, BufData::I32(c.timestamp_type))?)?;
        if c.opts.include_headers {
            let (valid, nulls) = bits(py, c.header_valid)?;
            out.set_item(
                "headers",
                (valid, buf(py, BufData::I32(c.header_offsets))?, nulls),
            )?;
            out.set_item("headers.key", binary(py, c.header_key)?)?;
            out.set_item("headers.value", binary(py, c.header_value)?)?;
        }
        if c.opts.segment_columns {
            out.set_item("position", buf(py, BufData::I64(c.position))?)?;
            out.set_item("magic", buf(py, BufData::I32(c.magic))?)?;
            out.set_item("compression", binary(py, c.compression)?)?;
            out.set_item("leader_epoch", buf(py, BufData::I32(c.leader_epoch))?)?;
            out.set_item("producer_id", buf(py, BufData::I64(c.producer_id))?)?;
            out.set_item(
                "is_transactional",
                buf(py, BufData::U8(c.is_transactional.bytes))?,
            )?;
            out.set_item("is_control", buf(py, BufData::U8(c.is_control.bytes))?)?;
        }
        Ok(out)
    }
}

#[pymodule]
fn _kernel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(py_walk, m)?)?;
    m.add_function(wrap_pyfunction!(py_index_add, m)?)?;
    m.add_function(wrap_pyfunction!(py_plain_run, m)?)?;
    m.add_function(wrap_pyfunction!(py_read_walk, m)?)?;
    m.add_function(wrap_pyfunction!(py_batch_json, m)?)?;
    m.add_function(wrap_pyfunction!(py_records_json, m)?)?;
    m.add_function(wrap_pyfunction!(py_crc32c, m)?)?;
    m.add_function(wrap_pyfunction!(py_decompress, m)?)?;
    m.add_function(wrap_pyfunction!(py_resync_scan, m)?)?;
    m.add_class::<Records>()?;
    m.add_class::<JsonRecords>()?;
    m.add_class::<Lines>()?;
    m.add_class::<Buf>()?;
    m.add("ROW", walk::ROW)?;
    m.add("MODES", ("auto", "utf8", "hex", "base64", "redact"))?;
    m.add("VERSION", env!("KSEG_VERSION"))?; // kseg/__init__.py's __version__ (build.rs)
    Ok(())
}
