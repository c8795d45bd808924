//! Records of valid v2 batches -> the columns of the Spark source's `records` schema
//! (kseg/spark/arrow.py), as Arrow buffers: offsets + data for binary/string columns, validity
//! bitmaps, int32/int64 arrays, the headers list<struct<key: string, value: binary>>.
//!
//! Like the rest of the kernel this does only the common case, exactly as the Python decoder
//! does it, and says where it stopped: a batch it does not take whole (a bad CRC, legacy,
//! torn, a lie in its records, a record timestamp or offset the Python decoder turns into a
//! null with a warning, anything) is undone and left to the Python decoder. Every rule and
//! message stays there. Output grows with the records actually decoded (never with a count
//! read from disk), and every record is at least 7 bytes of input, every header 2. Every growth
//! is fallible (`put`, try_reserve): a column that cannot grow leaves the batch to the Python
//! decoder (which then decodes it or runs out of memory as it would without the kernel), never
//! the abort of a failed infallible growth.

use crate::codecs::Codecs;
use crate::layout::{
    Header, ATTR_COMPRESSION, ATTR_TIMESTAMP_TYPE, ATTR_TRANSACTIONAL, HEADER_SIZE, MAGIC,
};
use crate::records::{parse_records, Headers, Rec, REPLACEMENT};
use crate::walk::{crc_ok, v2_batch};

/// Why `Columns::walk` returned.
pub const STOP_END: u8 = 0; // reached `end`
pub const STOP_FULL: u8 = 1; // holds `max_rows` rows or more: take them, call again from `stop`
pub const STOP_OTHER: u8 = 2; // the Python decoder takes the entry at `stop`
pub const STOP_COMPRESSED: u8 = 3; // the compressed batch at `stop` needs its records decoded
pub const STOP_DONE: u8 = 4; // the batch at `stop` starts past to_offset: the task is done

/// What kseg.spark.arrow.record_batches was asked for, and the Python constants it uses.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub include_headers: bool,
    pub segment_columns: bool,
    pub include_control: bool,
    pub from_time: Option<i64>,
    pub to_time: Option<i64>,
    pub from_offset: Option<i64>,
    pub to_offset: Option<i64>,
    /// file position of buf[0] (the `shift` of kseg.spark.fs.open_range)
    pub shift: i64,
    /// kseg.format.timestamps.MIN_MS / MAX_MS: outside, the Python decoder writes a null
    pub min_ms: i64,
    pub max_ms: i64,
    /// kseg.format.compression.CODEC_NAMES by id
    pub codec_names: Vec<Vec<u8>>,
    /// the core's bound on a batch's decompressed size (compression.DEFAULT_MAX_DECOMPRESSED):
    /// with it the kernel decompresses batches itself (codecs.rs); None: `walk` stops at each
    /// compressed batch (STOP_COMPRESSED) for the core's codecs
    pub max_decompressed: Option<usize>,
}

/// `v.push(x)`, or None when `v` cannot grow.
#[inline(always)]
fn put<T>(v: &mut Vec<T>, x: T) -> Option<()> {
    if v.len() == v.capacity() {
        v.try_reserve(1).ok()?;
    }
    v.push(x);
    Some(())
}

/// A validity bitmap (or a boolean column), least significant bit first.
#[derive(Default, Debug)]
pub struct Bits {
    pub bytes: Vec<u8>,
    pub len: usize,
}

impl Bits {
    /// None when the bitmap cannot grow.
    #[inline]
    pub fn push(&mut self, v: bool) -> Option<()> {
        if self.len % 8 == 0 {
            put(&mut self.bytes, 0)?;
        }
        if v {
            self.bytes[self.len / 8] |= 1 << (self.len % 8);
        }
        self.len += 1;
        Some(())
    }

    fn truncate(&mut self, n: usize) {
        if n >= self.len {
            return;
        }
        self.bytes.truncate(n.div_ceil(8));
        if n % 8 != 0 {
            if let Some(last) = self.bytes.last_mut() {
                *last &= (1u8 << (n % 8)) - 1;
            }
        }
        self.len = n;
    }

    /// How many bits are 0.
    pub fn unset(&self) -> usize {
        self.len
            - self
                .bytes
                .iter()
                .map(|b| b.count_ones() as usize)
                .sum::<usize>()
    }
}

/// A binary (or string) column: i32 offsets, data, validity.
#[derive(Debug)]
pub struct Binary {
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
    pub valid: Bits,
}

impl Default for Binary {
    fn default() -> Self {
        Binary {
            offsets: vec![0],
            data: Vec::new(),
            valid: Bits::default(),
        }
    }
}

impl Binary {
    /// None when the data would pass what i32 offsets can address, or a buffer cannot grow.
    #[inline]
    fn push(&mut self, v: Option<&[u8]>) -> Option<()> {
        match v {
            Some(b) => {
                let end = i32::try_from(self.data.len() + b.len()).ok()?;
                self.data.try_reserve(b.len()).ok()?;
                self.data.extend_from_slice(b);
                self.end(end, true)
            }
            None => self.end(*self.offsets.last().unwrap_or(&0), false),
        }
    }

    /// A header key as Python's bytes.decode("utf-8", "replace") gives it (each maximal invalid
    /// subpart one U+FFFD, as String::from_utf8_lossy), written in place: no copy of the text.
    fn push_lossy(&mut self, b: &[u8]) -> Option<()> {
        if std::str::from_utf8(b).is_ok() {
            return self.push(Some(b)); // the common case
        }
        let mut size = 0usize;
        for chunk in b.utf8_chunks() {
            size += chunk.valid().len();
            if !chunk.invalid().is_empty() {
                size += REPLACEMENT.len();
            }
        }
        let end = i32::try_from(self.data.len() + size).ok()?;
        self.data.try_reserve(size).ok()?;
        for chunk in b.utf8_chunks() {
            self.data.extend_from_slice(chunk.valid().as_bytes());
            if !chunk.invalid().is_empty() {
                self.data.extend_from_slice(REPLACEMENT);
            }
        }
        self.end(end, true)
    }

    /// The offset and validity of a value just written.
    #[inline]
    fn end(&mut self, end: i32, valid: bool) -> Option<()> {
        put(&mut self.offsets, end)?;
        self.valid.push(valid)
    }

    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    fn truncate(&mut self, n: usize) {
        if n >= self.len() {
            return;
        }
        self.offsets.truncate(n + 1);
        self.data.truncate(self.offsets[n] as usize);
        self.valid.truncate(n);
    }
}

/// A batch's header and its position in the file (the `position` column), behind one pointer
/// for the record loop: the position as an argument of its own cost ~3% there.
struct At {
    header: Header,
    position: i64,
}

/// The columns of one output chunk.
#[derive(Default, Debug)]
pub struct Columns {
    pub opts: Options,
    pub rows: usize,
    pub key: Binary,
    pub value: Binary,
    pub offset: Vec<i64>,
    pub timestamp: Vec<i64>, // microseconds
    pub timestamp_type: Vec<i32>,
    // headers: list offsets and validity, then the struct's two children
    pub header_offsets: Vec<i32>,
    pub header_valid: Bits,
    pub header_key: Binary,
    pub header_value: Binary,
    // segment columns
    pub position: Vec<i64>,
    pub magic: Vec<i32>,
    pub compression: Binary,
    pub leader_epoch: Vec<i32>,
    pub producer_id: Vec<i64>,
    pub is_transactional: Bits,
    pub is_control: Bits,
    /// the codecs' reused buffers and contexts (kept across chunks: see `take_codecs`)
    pub codecs: Codecs,
}

impl Columns {
    pub fn new(opts: Options) -> Columns {
        Columns {
            opts,
            header_offsets: vec![0],
            ..Default::default()
        }
    }

    /// Room for a chunk from `bytes` of input, so the columns do not grow by copying: sized
    /// from the bytes present (a record takes at least 7) and the caller's row limit, never
    /// from a count on disk; at most a few MiB. A hint: when it cannot be had, the columns
    /// grow as they go (each growth fallible).
    fn reserve(&mut self, bytes: usize, max_rows: usize) {
        let rows = (bytes / 7).min(max_rows.saturating_add(1)).min(1 << 16);
        let data = bytes.min(8 << 20);
        let _ = self.value.data.try_reserve(data);
        let _ = self.value.offsets.try_reserve(rows);
        let _ = self.key.offsets.try_reserve(rows);
        let _ = self.offset.try_reserve(rows);
        let _ = self.timestamp.try_reserve(rows);
        let _ = self.timestamp_type.try_reserve(rows);
    }

    /// Drop every row from `n` on (the rows of a batch that is left to the Python decoder).
    fn truncate(&mut self, n: usize) {
        self.rows = n;
        self.key.truncate(n);
        self.value.truncate(n);
        self.offset.truncate(n);
        self.timestamp.truncate(n);
        self.timestamp_type.truncate(n);
        if self.opts.include_headers {
            self.header_offsets.truncate(n + 1);
            self.header_valid.truncate(n);
            let m = *self.header_offsets.last().unwrap_or(&0) as usize;
            self.header_key.truncate(m);
            self.header_value.truncate(m);
        }
        if self.opts.segment_columns {
            self.position.truncate(n);
            self.magic.truncate(n);
            self.compression.truncate(n);
            self.leader_epoch.truncate(n);
            self.producer_id.truncate(n);
            self.is_transactional.truncate(n);
            self.is_control.truncate(n);
        }
    }

    /// One record, if it passes the filters; None: the batch is the Python decoder's.
    #[inline]
    fn record(&mut self, b: &At, rec: &Rec<'_>, headers: &Headers<'_>) -> Option<()> {
        let (h, position) = (&b.header, b.position);
        let o = &self.opts;
        let log_append_time = h.has(ATTR_TIMESTAMP_TYPE);
        let ts: i128 = if log_append_time {
            h.max_timestamp as i128
        } else {
            // a Java long sum: wraps at the int64 limits, as the core's _wrap_timestamp_delta
            h.base_timestamp.wrapping_add(rec.ts_delta as i64) as i128
        };
        let offset: i128 = h.base_offset as i128 + rec.offset_delta;
        if o.from_time.is_some_and(|f| ts < f as i128) || o.to_time.is_some_and(|t| ts > t as i128)
        {
            return Some(());
        }
        if o.from_offset.is_some_and(|f| offset < f as i128)
            || o.to_offset.is_some_and(|t| offset > t as i128)
        {
            return Some(());
        }
        // a value the Python decoder writes as null with a warning: its batch goes there
        let offset = i64::try_from(offset).ok()?;
        if ts < o.min_ms as i128 || ts > o.max_ms as i128 {
            return None;
        }
        let ts = ts as i64 * 1000; // |ts| <= 2.6e14: no overflow
        self.key.push(rec.key)?;
        self.value.push(rec.value)?;
        put(&mut self.offset, offset)?;
        put(&mut self.timestamp, ts)?;
        put(&mut self.timestamp_type, i32::from(log_append_time))?;
        if self.opts.include_headers {
            if headers.is_empty() {
                self.header_valid.push(false)?;
            } else {
                for (hk, hv) in headers.iter() {
                    self.header_key.push_lossy(hk)?;
                    self.header_value.push(hv)?;
                }
                self.header_valid.push(true)?;
            }
            let m = i32::try_from(self.header_key.len()).ok()?;
            put(&mut self.header_offsets, m)?;
        }
        if self.opts.segment_columns {
            let name = self.opts.codec_names.get(h.compression_id())?;
            self.compression.push(Some(name))?;
            put(&mut self.position, position)?;
            put(&mut self.magic, MAGIC as i32)?; // v2_batch let only MAGIC through
            put(&mut self.leader_epoch, h.partition_leader_epoch)?;
            put(&mut self.producer_id, h.producer_id)?;
            self.is_transactional.push(h.has(ATTR_TRANSACTIONAL))?;
            self.is_control.push(h.is_control())?;
        }
        self.rows += 1;
        Some(())
    }

    /// The records of one batch in `data[pos..end]`, all of them or none.
    fn batch(&mut self, b: &At, data: &[u8], pos: usize, end: usize) -> bool {
        let mark = self.rows;
        let mut p = pos;
        let ok = parse_records(
            data,
            &mut p,
            end,
            b.header.records_count as i64,
            |rec, headers| self.record(b, rec, headers),
        )
        .is_some();
        if !ok {
            self.truncate(mark);
        }
        ok
    }

    /// Decode the valid uncompressed v2 batches of `buf[start..end]` that the Python decoder
    /// would decode, skipping those it skips, until `max_rows` rows are held (checked between
    /// batches) or an entry it must see. Returns (stop position, reason).
    pub fn walk(&mut self, buf: &[u8], start: usize, end: usize, max_rows: usize) -> (usize, u8) {
        let end = end.min(buf.len());
        if self.rows == 0 && start < end {
            self.reserve(end - start, max_rows);
        }
        let mut pos = start;
        while pos < end {
            if self.rows >= max_rows {
                return (pos, STOP_FULL);
            }
            let (h, size) = match v2_batch(buf, pos, end) {
                Some(b) => b,
                None => return (pos, STOP_OTHER),
            };
            if !crc_ok(buf, pos, size, &h) {
                return (pos, STOP_OTHER);
            }
            // record_batches' batch-level tests, in its order
            if h.is_control() && !self.opts.include_control {
                pos += size;
                continue;
            }
            if self.opts.from_time.is_some_and(|f| h.max_timestamp < f) {
                pos += size;
                continue;
            }
            if self.opts.to_offset.is_some_and(|t| h.base_offset > t) {
                return (pos, STOP_DONE);
            }
            if self
                .opts
                .from_offset
                .is_some_and(|f| h.last_offset() < f as i128)
            {
                pos += size;
                continue;
            }
            let at = At {
                header: h,
                position: pos as i64 + self.opts.shift,
            };
            if h.has(ATTR_COMPRESSION) {
                // decompressed here when the kernel may; anything else (an error, a bomb, a
                // framing codecs.rs leaves alone, records the core must see): the core's codecs
                if !self.inflated(&at, &buf[pos + HEADER_SIZE..pos + size]) {
                    return (pos, STOP_COMPRESSED);
                }
                pos += size;
                continue;
            }
            if !self.batch(&at, buf, pos + HEADER_SIZE, pos + size) {
                return (pos, STOP_OTHER);
            }
            pos += size;
        }
        (pos, STOP_END)
    }

    /// The records of a compressed batch whose payload is `payload`, decompressed by codecs.rs;
    /// false: nothing added (no limit set, or the core must decide).
    fn inflated(&mut self, b: &At, payload: &[u8]) -> bool {
        let Some(limit) = self.opts.max_decompressed else {
            return false;
        };
        let mut codecs = std::mem::take(&mut self.codecs);
        let ok = match codecs.decompress(b.header.compression_id() as u8, payload, limit) {
            Some(data) => self.batch(b, data, 0, data.len()),
            None => false,
        };
        codecs.settle();
        self.codecs = codecs;
        ok
    }

    /// The records of the compressed batch at `buf[pos]` (as `walk` returned it), decompressed
    /// by the Python core's bounded codecs into `data`; false: the Python decoder takes it.
    pub fn decompressed(&mut self, buf: &[u8], pos: usize, data: &[u8]) -> bool {
        let Some((h, _)) = v2_batch(buf, pos, buf.len()) else {
            return false;
        };
        let at = At {
            header: h,
            position: pos as i64 + self.opts.shift,
        };
        self.batch(&at, data, 0, data.len())
    }
}
