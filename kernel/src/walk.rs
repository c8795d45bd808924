//! The v2 batch header walk with CRC-32C, and Kafka's index-append rule.
//!
//! The walk knows only the common case: a v2 batch whose size fits and whose CRC matches. At
//! anything else (legacy magic, a bad CRC, a short or torn entry, an offset that overflows) it
//! stops and reports the byte position; the Python core then handles that entry with its own
//! rules and messages. Nothing here decides what is an error.

pub const LOG_OVERHEAD: usize = 12;
pub const HEADER_SIZE: usize = 61;
pub const MIN_BATCH_LENGTH: i32 = 49;
pub const MAGIC_POS: usize = 16;
pub const CRC_POS: usize = 17;
pub const CRC_COVERAGE_START: usize = 21;
/// Values per batch row: position, size, magic, base_offset, last_offset, max_timestamp,
/// records_count, attributes, producer_id, crc_ok, partition_leader_epoch (the tuple of
/// kseg.format.log.walk_headers).
pub const ROW: usize = 11;

/// Why a walk returned.
pub const STOP_END: u8 = 0; // reached `end`
pub const STOP_LIMIT: u8 = 1; // returned `max_batches` rows: call again from `stop`
pub const STOP_OTHER: u8 = 2; // the entry at `stop` is not a plain valid v2 batch

#[inline]
pub fn be_i64(b: &[u8], p: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[p..p + 8]);
    i64::from_be_bytes(a)
}

#[inline]
pub fn be_i32(b: &[u8], p: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[p..p + 4]);
    i32::from_be_bytes(a)
}

#[inline]
pub fn be_u32(b: &[u8], p: usize) -> u32 {
    be_i32(b, p) as u32
}

#[inline]
pub fn be_i16(b: &[u8], p: usize) -> i16 {
    i16::from_be_bytes([b[p], b[p + 1]])
}

/// The size of the v2 batch at `pos` if it fits in `buf[..end]` with a sane length, else None.
#[inline]
pub fn v2_size(buf: &[u8], pos: usize, end: usize) -> Option<usize> {
    if end < pos || end - pos < HEADER_SIZE || buf[pos + MAGIC_POS] != 2 {
        return None;
    }
    let length = be_i32(buf, pos + 8);
    if length < MIN_BATCH_LENGTH {
        return None;
    }
    let size = length as usize + LOG_OVERHEAD;
    if size > end - pos {
        return None;
    }
    Some(size)
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
        let size = match v2_size(buf, pos, end) {
            Some(s) => s,
            None => return (pos, STOP_OTHER),
        };
        let crc = be_u32(buf, pos + CRC_POS);
        if crc32c::crc32c(&buf[pos + CRC_COVERAGE_START..pos + size]) != crc {
            return (pos, STOP_OTHER);
        }
        let base = be_i64(buf, pos);
        let last = match base.checked_add(be_i32(buf, pos + 23) as i64) {
            Some(v) => v,
            None => return (pos, STOP_OTHER),
        };
        rows.extend_from_slice(&[
            pos as i64,
            size as i64,
            2,
            base,
            last,
            be_i64(buf, pos + 35),        // max_timestamp
            be_i32(buf, pos + 57) as i64, // records_count
            be_i16(buf, pos + 21) as i64, // attributes
            be_i64(buf, pos + 43),        // producer_id
            1,
            be_i32(buf, pos + 12) as i64, // partition_leader_epoch
        ]);
        n += 1;
        pos += size;
    }
    (pos, STOP_END)
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

pub const ATTR_CONTROL: i64 = 0x20;
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
            || magic != 2
            || first >= p.epoch_next
            || first <= prev_last
            || (last as i128) - (p.base_offset as i128) > INT32_MAX
            || attrs & ATTR_CONTROL != 0
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
