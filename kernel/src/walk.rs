//! The v2 batch header walk with CRC-32C, and Kafka's index-append rule.
//!
//! The walk knows only the common case: a v2 batch whose size fits and whose CRC matches. At
//! anything else (legacy magic, a bad CRC, a short or torn entry, an offset that overflows) it
//! stops and reports the byte position; the Python core then handles that entry with its own
//! rules and messages. Nothing here decides what is an error.

use crate::layout::{
    Header, ATTR_COMPRESSION, ATTR_CONTROL, ATTR_TIMESTAMP_TYPE, CRC_COVERAGE_START, HEADER_SIZE,
    LOG_OVERHEAD, MAGIC, MAGIC_POS, MIN_BATCH_LENGTH,
};

/// Values per batch row: position, size, magic, base_offset, last_offset, max_timestamp,
/// records_count, attributes, producer_id, crc_ok, partition_leader_epoch (the tuple of
/// kseg.format.log.walk_headers).
pub const ROW: usize = 11;

/// Why a walk returned.
pub const STOP_END: u8 = 0; // reached `end`
pub const STOP_LIMIT: u8 = 1; // returned `max_batches` rows: call again from `stop`
pub const STOP_OTHER: u8 = 2; // the entry at `stop` is not a plain valid v2 batch

/// The header and size of the v2 batch at `pos` if it fits in `buf[..end]` with a sane
/// length, else None: the one place the kernel reads a batch header.
#[inline]
pub fn v2_batch(buf: &[u8], pos: usize, end: usize) -> Option<(Header, usize)> {
    if end < pos || end - pos < HEADER_SIZE || buf[pos + MAGIC_POS] as i8 != MAGIC {
        return None;
    }
    let h = Header::read(buf, pos);
    if h.batch_length < MIN_BATCH_LENGTH {
        return None;
    }
    let size = h.batch_length as usize + LOG_OVERHEAD;
    if size > end - pos {
        return None;
    }
    Some((h, size))
}

/// CRC-32C (Castagnoli, Kafka's batch checksum) of `data`: SIMD carry-less multiplication
/// where the CPU has it, chosen at run time.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, data) as u32
}

/// Whether the CRC-32C of the batch at `buf[pos..pos + size]` matches its header's.
#[inline]
pub fn crc_ok(buf: &[u8], pos: usize, size: usize, h: &Header) -> bool {
    crc32c(&buf[pos + CRC_COVERAGE_START..pos + size]) == h.crc
}

/// What the kernel derives from a header, as kseg.format.batch.RecordBatch derives it.
impl Header {
    #[inline]
    pub fn has(&self, bit: i16) -> bool {
        self.attributes & bit != 0
    }

    /// The codec id (kseg.format.compression), whether or not it is known.
    #[inline]
    pub fn compression_id(&self) -> usize {
        (self.attributes & ATTR_COMPRESSION) as usize
    }

    /// base_offset + last_offset_delta, unbounded as in the core.
    #[inline]
    pub fn last_offset(&self) -> i128 {
        self.base_offset as i128 + self.last_offset_delta as i128
    }

    /// The timestamp of every record (max_timestamp) when the broker set it, else None.
    #[inline]
    pub fn log_append_time(&self) -> Option<i64> {
        if self.has(ATTR_TIMESTAMP_TYPE) {
            Some(self.max_timestamp)
        } else {
            None
        }
    }

    #[inline]
    pub fn is_control(&self) -> bool {
        self.has(ATTR_CONTROL)
    }
}

/// Walk `buf[start..end]`, appending one row of ROW values per valid v2 batch to `rows`.
/// Returns (stop position, reason).
pub fn walk(
    buf: &[u8],
    start: usize,
    end: usize,
    max_batches: usize,
    rows: &mut Vec<i64>,
) -> (usize, u8) {
    let end = end.min(buf.len());
    let mut pos = start;
    let mut n = 0usize;
    while pos < end {
        if n >= max_batches {
            return (pos, STOP_LIMIT);
        }
        let (h, size) = match v2_batch(buf, pos, end) {
            Some(b) => b,
            None => return (pos, STOP_OTHER),
        };
        if !crc_ok(buf, pos, size, &h) {
            return (pos, STOP_OTHER);
        }
        let last = match h.base_offset.checked_add(h.last_offset_delta as i64) {
            Some(v) => v,
            None => return (pos, STOP_OTHER),
        };
        rows.extend_from_slice(&[
            pos as i64,
            size as i64,
            MAGIC as i64, // v2_batch let only MAGIC through
            h.base_offset,
            last,
            h.max_timestamp,
            h.records_count as i64,
            h.attributes as i64,
            h.producer_id,
            1, // crc_ok
            h.partition_leader_epoch as i64,
        ]);
        n += 1;
        pos += size;
    }
    (pos, STOP_END)
}

/// Whether the walk's stop at `pos` (STOP_OTHER with only `buf[..avail]` read so far) may be a
/// plain batch that is not yet all there: its header is cut short, or its header is sane and
/// its size reaches past `avail`. Anything else at `pos` (legacy magic, a length below the
/// minimum, a bad CRC, an offset that overflows) stays what it is however much more is read.
#[inline]
pub fn cut_short(buf: &[u8], pos: usize, avail: usize) -> bool {
    if avail < pos || avail - pos < HEADER_SIZE {
        return true;
    }
    if buf[pos + MAGIC_POS] as i8 != MAGIC {
        return false;
    }
    let h = Header::read(buf, pos);
    h.batch_length >= MIN_BATCH_LENGTH && h.batch_length as usize + LOG_OVERHEAD > avail - pos
}

/// What `read_walk` did: the walk's (stop, reason) and how far the file was read.
pub struct ReadWalk {
    pub stop: usize,
    pub reason: u8,
    /// `buf[read_from..read_end]` now holds the file's bytes; short of `read_to` when a read
    /// returned nothing or failed (the caller reads from there again and reports it).
    pub read_end: usize,
}

/// Read the file's `[read_from, read_to)` into `buf` at the same positions, `piece` bytes per
/// `pread`, and walk (as `walk`, up to `walk_end`) from `walk_from` behind each piece: the
/// CRC reads the batch while it is still in the CPU's cache, where a walk after one large read
/// fetches it from memory again. Rows and stop are exactly `walk(buf, walk_from, walk_end)`'s
/// once the read is whole, with one difference: a plain batch that only ends past `read_to`
/// (inside `walk_end`) ends the walk with STOP_LIMIT, "call again from here" (the next call
/// reads on), not STOP_OTHER (the Python core would take it, and read the next window itself).
/// A read cut short ends the walk with STOP_LIMIT too, and so do `max_batches` rows, which
/// also end the read (`read_end` short of `read_to`: the rows are full, nothing was cut).
#[allow(clippy::too_many_arguments)]
pub fn read_walk(
    file: &std::fs::File,
    buf: &mut [u8],
    read_from: usize,
    read_to: usize,
    walk_from: usize,
    walk_end: usize,
    max_batches: usize,
    piece: usize,
    rows: &mut Vec<i64>,
) -> ReadWalk {
    use std::os::unix::fs::FileExt;
    let read_to = read_to.min(buf.len());
    let read_from = read_from.min(read_to);
    let outer = walk_end.min(buf.len()); // the caller's window: it may go on past this read
    let walk_end = outer.min(read_to);
    let piece = piece.max(1);
    let (mut r, mut pos) = (read_from, walk_from);
    let mut walking = true;
    let mut reason = STOP_END;
    while r < read_to {
        let n = piece.min(read_to - r);
        match file.read_at(&mut buf[r..r + n], r as u64) {
            Ok(k) if k > 0 => r += k,
            // nothing read (the file shrank), an error, a signal (EINTR: Python's handler runs
            // once the call returns): the caller reads from `r` again and reports what it finds
            _ => break,
        }
        if walking && pos < walk_end && r > pos {
            let avail = r.min(walk_end);
            let left = max_batches.saturating_sub(rows.len() / ROW);
            let (stop, why) = walk(buf, pos, avail, left, rows);
            pos = stop;
            // a batch cut by what is read so far: walked on behind the next piece (or call)
            let wait = why == STOP_OTHER && avail < outer && cut_short(buf, stop, avail);
            if why == STOP_LIMIT {
                // the rows are full: read no further, so the next call's walk still finds
                // what it reads in the cache (the caller makes [.., r) readable, no more)
                return ReadWalk {
                    stop,
                    reason: why,
                    read_end: r,
                };
            }
            if why == STOP_OTHER && !wait {
                walking = false;
                reason = why;
            }
        }
    }
    if walking {
        if r < read_to {
            reason = STOP_LIMIT; // the read stopped short: what is walked stands, call again
        } else {
            if pos < walk_end {
                // nothing was left to read, or the last piece ended inside a batch
                let left = max_batches.saturating_sub(rows.len() / ROW);
                let (stop, why) = walk(buf, pos, walk_end, left, rows);
                pos = stop;
                reason = why;
            }
            if reason == STOP_OTHER && walk_end < outer && cut_short(buf, pos, walk_end) {
                reason = STOP_LIMIT;
            }
        }
    }
    ReadWalk {
        stop: pos,
        reason,
        read_end: r,
    }
}

/// kseg.format.index_rule.IndexBuilder's state, field for field.
#[derive(Clone, Debug)]
pub struct IndexState {
    pub base_offset: i64,
    pub interval: i64,
    pub valid_bytes: i64,
    pub last_entry_pos: i64,
    pub last_index_offset: Option<i64>,
    pub last_time_ts: i64,
    pub max_timestamp: i64,
    pub max_timestamp_offset: i64,
}

impl IndexState {
    /// IndexBuilder.add for one entry; false (state untouched) when an entry would not fit the
    /// index's 32-bit fields or a sum would overflow: the Python builder then handles that entry.
    pub fn add(
        &mut self,
        last_offset: i64,
        max_timestamp: i64,
        size: i64,
        off: &mut Vec<u8>,
        time: &mut Vec<u8>,
    ) -> bool {
        let mut next = self.clone();
        if max_timestamp > next.max_timestamp {
            next.max_timestamp = max_timestamp;
            next.max_timestamp_offset = last_offset;
        }
        let gap = match next.valid_bytes.checked_sub(next.last_entry_pos) {
            Some(g) => g,
            None => return false,
        };
        let (mut off_entry, mut time_entry) = (None, None);
        if gap > next.interval {
            if next.last_index_offset.map_or(true, |l| last_offset > l) {
                let rel = match last_offset.checked_sub(next.base_offset) {
                    Some(r) if i32::try_from(r).is_ok() => r as i32,
                    _ => return false,
                };
                let p = match i32::try_from(next.valid_bytes) {
                    Ok(p) => p,
                    Err(_) => return false,
                };
                off_entry = Some((rel, p));
                next.last_index_offset = Some(last_offset);
            }
            if next.max_timestamp > next.last_time_ts {
                let rel = match next.max_timestamp_offset.checked_sub(next.base_offset) {
                    Some(r) if i32::try_from(r).is_ok() => r as i32,
                    _ => return false,
                };
                time_entry = Some((next.max_timestamp, rel));
                next.last_time_ts = next.max_timestamp;
            }
            next.last_entry_pos = next.valid_bytes;
        }
        next.valid_bytes = match next.valid_bytes.checked_add(size) {
            Some(v) => v,
            None => return false,
        };
        if let Some((rel, p)) = off_entry {
            off.extend_from_slice(&rel.to_be_bytes());
            off.extend_from_slice(&p.to_be_bytes());
        }
        if let Some((ts, rel)) = time_entry {
            time.extend_from_slice(&ts.to_be_bytes());
            time.extend_from_slice(&rel.to_be_bytes());
        }
        *self = next;
        true
    }
}

/// What a run of rows must satisfy to need no look from the Python core: the parameters of
/// kseg.verify.segment.scan_segment's fast path at the run's start.
pub struct PlainRun {
    pub base_offset: i64,
    pub prev_last: i64,
    pub want_epoch: Option<i64>,
    pub epoch_next: i64,
    pub stop_at_producer: bool,
}

const INT32_MAX: i128 = 0x7FFF_FFFF;

/// The number of leading walk rows (`raw`: native int64, ROW per row) that are plain: a v2
/// batch whose CRC matched, offsets increasing from `prev_last`, within 2^31-1 of the base
/// offset, not a control batch, a records_count that fits its offsets, inside the current
/// leader-epoch range with the expected epoch, and (when transactions are tracked) without a
/// producer id. This decides nothing: a row that is not plain goes to the core, which applies
/// its rules (and may find it plain after all). Also returns the last row's last_offset and
/// the run's largest max_timestamp (or -1).
pub fn plain_run(raw: &[u8], p: &PlainRun) -> (usize, i64, i64) {
    let mut prev_last = p.prev_last;
    let mut max_ts: i64 = -1;
    let mut n = 0usize;
    for row in raw.chunks_exact(ROW * 8) {
        let v = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&row[i * 8..i * 8 + 8]);
            i64::from_ne_bytes(a)
        };
        let (magic, first, last, ts, count, attrs, pid, ok, ple) =
            (v(2), v(3), v(4), v(5), v(6), v(7), v(8), v(9), v(10));
        if ok != 1
            || magic != MAGIC as i64
            || first >= p.epoch_next
            || first <= prev_last
            || (last as i128) - (p.base_offset as i128) > INT32_MAX
            || attrs & (ATTR_CONTROL as i64) != 0
            || count < 0
            || (count as i128) > (last as i128) - (first as i128) + 1
            || p.want_epoch.is_some_and(|e| e != ple)
            || (p.stop_at_producer && pid >= 0)
        {
            break;
        }
        prev_last = last;
        if ts > max_ts {
            max_ts = ts;
        }
        n += 1;
    }
    (n, prev_last, max_ts)
}
