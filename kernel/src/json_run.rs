//! `kseg dump -f json` over a run of plain v2 batches: the batch line and the record lines of
//! each, byte for byte what kseg dump prints for them, in one call per part of a file.
//!
//! A batch is taken only when the core would show it with no message and the kernel renders
//! all of it: magic 2, a size that fits, a matching CRC-32C, uncompressed, not a control batch,
//! every record valid (kseg.format.batch's rules, see records.rs), and not larger than a part.
//! At anything else the run stops before that entry and says where; the Python core then takes
//! it with its own rules and messages. Nothing here decides what is an error.

use crate::layout::{
    Header, ATTR_COMPRESSION, ATTR_CONTROL, ATTR_DELETE_HORIZON, ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL, CODEC_NAMES, HEADER_SIZE, MAGIC, NO_SEQUENCE,
};
use crate::records::{self, room, BatchInfo, Mode, NoMemory, Selection};
use crate::walk;

/// Why a run returned.
pub const RUN_END: u8 = 0; // reached `end`
pub const RUN_FULL: u8 = 1; // the part holds about `max_out` bytes: call again from `stop`
pub const RUN_OTHER: u8 = 2; // the core takes the entry at `stop`
pub const RUN_LIMIT: u8 = 3; // `max_records` shown: the dump of this file is over

/// The JSON text around a file's batch lines: `"file":` + `head`, and `tail` (the partition
/// tags, each `,"key":value`) before the closing brace.
pub struct BatchText<'a> {
    pub head: &'a [u8],
    pub tail: &'a [u8],
}

/// What one run did.
#[derive(Debug, PartialEq, Eq)]
pub struct Run {
    pub stop: usize,
    pub reason: u8,
    pub emitted: u64,
    pub lo: Option<i128>,
    pub hi: Option<i128>,
}

/// The batch line of kseg.dump.batch_events.batch_event for a valid v2 batch (`crc_valid` true, a
/// known codec), then the partition tags, as orjson writes it. Reserves its room first (at
/// most 1 KiB besides the file name and the tags: names, 15 integers, a codec name).
fn batch_line(
    out: &mut Vec<u8>,
    h: &Header,
    pos: usize,
    size: usize,
    text: &BatchText<'_>,
) -> Result<(), NoMemory> {
    room(out, 1024 + text.head.len() + text.tail.len())?;
    let flag = |out: &mut Vec<u8>, bit: i16| {
        out.extend_from_slice(if h.has(bit) { b"true" } else { b"false" })
    };
    out.extend_from_slice(b"{\"type\":\"batch\",\"file\":");
    out.extend_from_slice(text.head);
    out.extend_from_slice(b",\"position\":");
    records::int(out, pos as i128);
    out.extend_from_slice(b",\"base_offset\":");
    records::int(out, h.base_offset as i128);
    out.extend_from_slice(b",\"last_offset\":");
    records::int(out, h.last_offset());
    out.extend_from_slice(b",\"count\":");
    records::int(out, h.records_count as i128);
    // the magic as text: v2_batch let only MAGIC through (one int less per batch line: with
    // it, `int` stopped being inlined here and a run of small batches cost ~4% more)
    const _: () = assert!(MAGIC == 2);
    out.extend_from_slice(b",\"magic\":2,\"compression\":\"");
    out.extend_from_slice(CODEC_NAMES[h.compression_id()].as_bytes());
    out.extend_from_slice(b"\",\"crc\":");
    records::int(out, h.crc as i128);
    out.extend_from_slice(b",\"crc_valid\":true,\"size\":");
    records::int(out, size as i128);
    out.extend_from_slice(if h.has(ATTR_TIMESTAMP_TYPE) {
        b",\"timestamp_type\":\"LogAppendTime\",\"base_timestamp\":"
    } else {
        b",\"timestamp_type\":\"CreateTime\",\"base_timestamp\":"
    });
    records::int(out, h.base_timestamp as i128);
    out.extend_from_slice(b",\"max_timestamp\":");
    records::int(out, h.max_timestamp as i128);
    out.extend_from_slice(b",\"producer_id\":");
    records::int(out, h.producer_id as i128);
    out.extend_from_slice(b",\"producer_epoch\":");
    records::int(out, h.producer_epoch as i128);
    out.extend_from_slice(b",\"base_sequence\":");
    records::int(out, h.base_sequence as i128);
    out.extend_from_slice(b",\"last_sequence\":");
    // kseg.format.batch.RecordBatch.last_sequence: only -1 means "no sequence"
    let last_sequence = if h.base_sequence == NO_SEQUENCE {
        NO_SEQUENCE as i128
    } else {
        records::add_sequence(h.base_sequence as i128, h.last_offset_delta as i128)
    };
    records::int(out, last_sequence);
    out.extend_from_slice(b",\"partition_leader_epoch\":");
    records::int(out, h.partition_leader_epoch as i128);
    out.extend_from_slice(b",\"is_transactional\":");
    flag(out, ATTR_TRANSACTIONAL);
    out.extend_from_slice(b",\"is_control\":");
    flag(out, ATTR_CONTROL);
    out.extend_from_slice(b",\"delete_horizon_ms\":");
    if h.has(ATTR_DELETE_HORIZON) {
        records::int(out, h.base_timestamp as i128);
    } else {
        out.extend_from_slice(b"null");
    }
    out.extend_from_slice(text.tail);
    out.extend_from_slice(b"}\n");
    Ok(())
}

/// The lines of the batches of `d[start..end]` as kseg.dump.log_events.dump_log shows them with
/// `sel` and at most `max_records` records (--limit): a batch past to_offset ends the run
/// (RUN_OTHER: the core then ends the file), a batch that ends before from_offset or whose
/// max_timestamp is before from_time is skipped, and with a selection a batch line goes out only
/// with at least one of its records. Stops before a batch once `out` holds `max_out` bytes more
/// than at the start; a batch whose record lines reach `max_out` bytes is left to the core
/// (which shows it in parts). So `out` grows by less than 2 * `max_out` plus one batch line.
///
/// `batches_only` (--batches-only): batch lines only, of compressed and control batches too
/// (their records are not read, as the core does not read them), `max_records` counting
/// batches and `lo`/`hi` spanning the shown batches' offsets.
#[allow(clippy::too_many_arguments)]
pub fn run(
    d: &[u8],
    start: usize,
    end: usize,
    file_json: &[u8],
    text: &BatchText<'_>,
    mode: Mode,
    sel: &Selection,
    max_records: Option<u64>,
    max_out: usize,
    batches_only: bool,
    out: &mut Vec<u8>,
) -> Result<Run, NoMemory> {
    let end = end.min(d.len());
    let filtered = sel.from_offset.is_some()
        || sel.to_offset.is_some()
        || sel.from_time.is_some()
        || sel.to_time.is_some();
    let origin = out.len();
    let mut r = Run {
        stop: start,
        reason: RUN_END,
        emitted: 0,
        lo: None,
        hi: None,
    };
    let mut pos = start;
    let stop = |r: &mut Run, pos: usize, reason: u8| {
        r.stop = pos;
        r.reason = reason;
    };
    while pos < end {
        if out.len() - origin >= max_out {
            stop(&mut r, pos, RUN_FULL);
            return Ok(r);
        }
        let (h, size) = match walk::v2_batch(d, pos, end) {
            Some(b) => b,
            None => {
                stop(&mut r, pos, RUN_OTHER);
                return Ok(r);
            }
        };
        let taken = if batches_only {
            h.compression_id() < CODEC_NAMES.len()
        } else {
            !h.has(ATTR_COMPRESSION | ATTR_CONTROL)
        };
        if !taken || !walk::crc_ok(d, pos, size, &h) {
            stop(&mut r, pos, RUN_OTHER);
            return Ok(r);
        }
        let (base, last) = (h.base_offset, h.last_offset());
        if sel.to_offset.is_some_and(|t| base > t) {
            stop(&mut r, pos, RUN_OTHER);
            return Ok(r);
        }
        if sel.from_offset.is_some_and(|f| last < f as i128)
            || sel.from_time.is_some_and(|f| h.max_timestamp < f)
        {
            pos += size;
            continue;
        }
        if batches_only {
            if max_records.is_some_and(|m| r.emitted >= m) {
                stop(&mut r, pos, RUN_LIMIT); // --limit 0: not even one batch
                return Ok(r);
            }
            batch_line(out, &h, pos, size, text)?;
            r.emitted += 1;
            r.lo = Some(r.lo.map_or(base as i128, |v| v.min(base as i128)));
            r.hi = Some(r.hi.map_or(last, |v| v.max(last)));
            pos += size;
            if max_records.is_some_and(|m| r.emitted >= m) {
                stop(&mut r, pos, RUN_LIMIT);
                return Ok(r);
            }
            continue;
        }
        let info = BatchInfo::of(&h);
        let mark = out.len();
        batch_line(out, &h, pos, size, text)?;
        let left = max_records.map(|m| m - r.emitted);
        let part = records::render_part(
            d,
            pos + HEADER_SIZE,
            pos + size,
            &info,
            0,
            records::Within::default(),
            false,
            file_json,
            mode,
            sel,
            left,
            max_out,
            out,
        )?;
        let part = match part {
            Some(p) if p.resume.is_none() => p,
            _ => {
                // a problem in the records, or more lines than a part: the core's per-batch
                // path (which shows a large batch in parts)
                out.truncate(mark);
                stop(&mut r, pos, RUN_OTHER);
                return Ok(r);
            }
        };
        if filtered && part.emitted == 0 {
            out.truncate(mark); // the selection chose none of its records: nothing of it shows
        }
        r.emitted += part.emitted;
        if let Some(lo) = part.lo {
            r.lo = Some(r.lo.map_or(lo, |v| v.min(lo)));
        }
        if let Some(hi) = part.hi {
            r.hi = Some(r.hi.map_or(hi, |v| v.max(hi)));
        }
        pos += size;
        if max_records.is_some_and(|m| r.emitted >= m) {
            stop(&mut r, pos, RUN_LIMIT);
            return Ok(r);
        }
    }
    stop(&mut r, pos, RUN_END);
    Ok(r)
}
