//! Records of a v2 batch -> JSON Lines, byte for byte what `kseg dump -f json` prints.
//!
//! The decode mirrors kseg.format.batch.decode_records: it succeeds exactly where that function
//! succeeds and gives up (returns None) wherever it would raise, without saying why: the Python
//! core then decodes the batch itself and reports the problem. Arithmetic is in i128 because the
//! Python core's is unbounded (a 64-bit delta plus a 64-bit base does not fit an i64).

use sha2::{Digest, Sha256};

use crate::layout::{Header, MIN_RECORD_SIZE};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Auto,
    Utf8,
    Hex,
    Base64,
    Redact,
}

impl Mode {
    pub fn parse(name: &str) -> Option<Mode> {
        match name {
            "auto" => Some(Mode::Auto),
            "utf8" => Some(Mode::Utf8),
            "hex" => Some(Mode::Hex),
            "base64" => Some(Mode::Base64),
            "redact" => Some(Mode::Redact),
            _ => None, // json, none: the Python core
        }
    }
}

/// What a batch header tells the record loop.
pub struct BatchInfo {
    pub count: i64,
    pub base_offset: i64,
    pub base_timestamp: i64,
    pub log_append_time: Option<i64>,
    pub base_sequence: i64, // the batch's; a negative one gives every record -1
}

impl BatchInfo {
    /// What the header of a batch whose records are in the segment tells.
    pub fn of(h: &Header) -> BatchInfo {
        BatchInfo {
            count: h.records_count as i64,
            base_offset: h.base_offset,
            base_timestamp: h.base_timestamp,
            log_append_time: h.log_append_time(),
            base_sequence: h.base_sequence as i64,
        }
    }
}

/// One zig-zag varint of at most 10 bytes, all of it before `limit`.
#[inline(always)]
pub fn varint(d: &[u8], pos: &mut usize, limit: usize) -> Option<i128> {
    // one byte: most deltas and lengths of small records
    if *pos < limit {
        let b = d[*pos];
        if b < 0x80 {
            *pos += 1;
            return Some((((b >> 1) as i64) ^ -((b & 1) as i64)) as i128);
        }
    }
    varint_long(d, pos, limit)
}

#[inline(never)]
fn varint_long(d: &[u8], pos: &mut usize, limit: usize) -> Option<i128> {
    let mut result: u128 = 0;
    let mut shift = 0u32;
    let mut p = *pos;
    loop {
        if p >= limit {
            return None;
        }
        let b = d[p];
        p += 1;
        result |= ((b & 0x7F) as u128) << shift;
        if b < 0x80 {
            *pos = p;
            // 64 bits, as the core (and Java's long) keeps of a 10-byte varlong
            let r = result as u64;
            return Some((((r >> 1) as i64) ^ -((r & 1) as i64)) as i128);
        }
        shift += 7;
        if shift >= 70 {
            return None;
        }
    }
}

pub fn add_sequence(base: i128, delta: i128) -> i128 {
    if base > 0x7FFF_FFFF - delta {
        delta - (0x7FFF_FFFF - base) - 1
    } else {
        base + delta
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Standard base64 with padding, as Python's base64.b64encode writes it. base64-simd picks the
/// widest SIMD routine this CPU has at run time (AVX2 here: ~3x the best scalar table walk,
/// which was ~40% of a base64 dump); its `unsafe` stays inside that crate.
fn base64(out: &mut Vec<u8>, data: &[u8]) {
    let start = out.len();
    out.resize(start + base64_simd::STANDARD.encoded_length(data.len()), 0);
    let written =
        base64_simd::STANDARD.encode(data, base64_simd::Out::from_slice(&mut out[start..]));
    debug_assert_eq!(written.len(), out.len() - start);
}

/// A JSON string of valid UTF-8 text, escaped as orjson escapes it.
fn json_text(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in s.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0C => b"\\f",
            0..=0x1F => b"",
            _ => continue,
        };
        out.extend_from_slice(&s[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 15) as usize]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

/// Python's bytes.decode("utf-8", "replace") as a JSON string (both replace each maximal
/// invalid subpart with one U+FFFD).
fn json_lossy(out: &mut Vec<u8>, data: &[u8]) {
    match std::str::from_utf8(data) {
        Ok(_) => json_text(out, data),
        Err(_) => json_text(out, String::from_utf8_lossy(data).as_bytes()),
    }
}

/// kseg.dump.payload's printable text: UTF-8 without control bytes other than \t \n \r.
fn printable(data: &[u8]) -> bool {
    !data
        .iter()
        .any(|&b| (b < 0x20 && b != 0x09 && b != 0x0A && b != 0x0D) || b == 0x7F)
        && std::str::from_utf8(data).is_ok()
}

/// The shown value (JSON) of one key, value or header value; returns its encoding's JSON.
fn field(out: &mut Vec<u8>, data: Option<&[u8]>, mode: Mode) -> &'static [u8] {
    let data = match data {
        None => {
            out.extend_from_slice(b"null");
            return b"null";
        }
        Some(d) => d,
    };
    match mode {
        Mode::Base64 => {
            out.push(b'"');
            base64(out, data);
            out.push(b'"');
            b"\"base64\""
        }
        Mode::Auto => {
            if printable(data) {
                json_text(out, data);
                b"\"utf8\""
            } else {
                out.push(b'"');
                base64(out, data);
                out.push(b'"');
                b"\"base64\""
            }
        }
        Mode::Utf8 => {
            json_lossy(out, data);
            b"\"utf8\""
        }
        Mode::Hex => {
            out.reserve(data.len() * 2 + 2);
            out.push(b'"');
            for &b in data {
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 15) as usize]);
            }
            out.push(b'"');
            b"\"hex\""
        }
        Mode::Redact => {
            let digest = Sha256::digest(data);
            out.extend_from_slice(b"\"sha256:");
            for &b in &digest[..8] {
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 15) as usize]);
            }
            out.push(b'"');
            b"\"redacted\""
        }
    }
}

/// An integer as JSON text. Always inlined: out of line, a batch line's 14 calls cost ~5% of
/// a JSON run of small batches.
#[inline(always)]
pub fn int(out: &mut Vec<u8>, v: i128) {
    let mut b = itoa::Buffer::new();
    match i64::try_from(v) {
        Ok(small) => out.extend_from_slice(b.format(small).as_bytes()),
        Err(_) => out.extend_from_slice(b.format(v).as_bytes()),
    }
}

/// A key or value: length varint, then that many bytes (or -1 for null).
#[inline]
pub fn bytes_field<'a>(d: &'a [u8], pos: &mut usize, rec_end: usize) -> Option<Option<&'a [u8]>> {
    let len = varint(d, pos, rec_end)?;
    if len < 0 {
        return if len == -1 { Some(None) } else { None };
    }
    let len = usize::try_from(len).ok()?;
    if len > rec_end - *pos {
        return None;
    }
    let s = &d[*pos..*pos + len];
    *pos += len;
    Some(Some(s))
}

/// Append the JSON line of every record in `d[pos..end]` to `out`; on any problem truncate
/// `out` back and return None. `file_json` is the file name already as a JSON string.
pub fn records_json(
    d: &[u8],
    mut pos: usize,
    end: usize,
    info: &BatchInfo,
    file_json: &[u8],
    mode: Mode,
    out: &mut Vec<u8>,
) -> Option<usize> {
    let mark = out.len();
    let r = decode_into(d, &mut pos, end, info, file_json, mode, out);
    if r.is_none() {
        out.truncate(mark);
    }
    r
}

/// One record's fields, as kseg.format.batch.iter_record_chunks reads them.
pub struct Rec<'a> {
    pub ts_delta: i128,
    pub offset_delta: i128,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
}

/// A record's headers: (key bytes, value or None).
pub type Headers<'a> = [(&'a [u8], Option<&'a [u8]>)];

/// Walk the `count` records of `d[pos..end]` exactly as kseg.format.batch.iter_record_chunks
/// does, calling `f` for each; None (without saying why) wherever the core would raise, or when
/// `f` gives up. `f` sees a record only after all of its fields have been checked, but the
/// records of the batch after it are not yet: a caller that must not keep a partial batch
/// undoes what `f` did when this returns None. Returns the number of records.
pub fn parse_records<'a>(
    d: &'a [u8],
    pos: &mut usize,
    end: usize,
    count: i64,
    mut f: impl FnMut(&Rec<'a>, &Headers<'a>) -> Option<()>,
) -> Option<usize> {
    // the core refuses a count the bytes cannot hold before decoding anything (each record
    // takes at least MIN_RECORD_SIZE bytes)
    if count < 0
        || end > d.len()
        || *pos > end
        || count as u64 > ((end - *pos) / MIN_RECORD_SIZE) as u64
    {
        return None;
    }
    let mut headers: Vec<(&'a [u8], Option<&'a [u8]>)> = Vec::new();
    let mut i: i64 = 0;
    while i < count {
        if *pos >= end {
            return None;
        }
        let length = varint(d, pos, end)?;
        if length < 6 || length > (end - *pos) as i128 {
            return None;
        }
        let rec_end = *pos + length as usize;
        *pos += 1; // attributes: unused
        let ts_delta = varint(d, pos, rec_end)?;
        let offset_delta = varint(d, pos, rec_end)?;
        let key = bytes_field(d, pos, rec_end)?;
        let value = bytes_field(d, pos, rec_end)?;
        let hcount = varint(d, pos, rec_end)?;
        headers.clear();
        if hcount != 0 {
            if hcount < 0 || 2 * hcount > (rec_end - *pos) as i128 {
                return None;
            }
            for _ in 0..hcount {
                let hk = match bytes_field(d, pos, rec_end)? {
                    Some(k) => k,
                    None => return None, // a null header key is a lie
                };
                let hv = bytes_field(d, pos, rec_end)?;
                headers.push((hk, hv));
            }
        }
        if *pos != rec_end {
            return None;
        }
        f(
            &Rec {
                ts_delta,
                offset_delta,
                key,
                value,
            },
            &headers,
        )?;
        i += 1;
    }
    if *pos != end {
        return None;
    }
    Some(i as usize)
}

/// The record timestamp, as the core computes it.
#[inline]
fn record_timestamp(info: &BatchInfo, rec: &Rec<'_>) -> i128 {
    match info.log_append_time {
        Some(t) => t as i128,
        // a Java long sum: wraps at the int64 limits, as the core's _wrap_timestamp_delta
        None => info.base_timestamp.wrapping_add(rec.ts_delta as i64) as i128,
    }
}

/// One record's JSON line (kseg.render.dump_json.record_json_maker).
#[inline]
#[allow(clippy::too_many_arguments)]
fn write_line(
    out: &mut Vec<u8>,
    info: &BatchInfo,
    rec: &Rec<'_>,
    headers: &Headers<'_>,
    timestamp: i128,
    file_json: &[u8],
    mode: Mode,
    encodings: &mut Vec<&'static [u8]>,
) {
    let ts_type: &[u8] = if info.log_append_time.is_some() {
        b"LogAppendTime"
    } else {
        b"CreateTime"
    };
    let sequence = if info.base_sequence < 0 {
        -1
    } else {
        add_sequence(info.base_sequence as i128, rec.offset_delta)
    };
    out.extend_from_slice(b"{\"type\":\"record\",\"file\":");
    out.extend_from_slice(file_json);
    out.extend_from_slice(b",\"offset\":");
    int(out, info.base_offset as i128 + rec.offset_delta);
    out.extend_from_slice(b",\"timestamp\":");
    int(out, timestamp);
    out.extend_from_slice(b",\"timestamp_type\":\"");
    out.extend_from_slice(ts_type);
    out.extend_from_slice(b"\",\"key_size\":");
    int(out, rec.key.map_or(-1, |k| k.len() as i128));
    out.extend_from_slice(b",\"value_size\":");
    int(out, rec.value.map_or(-1, |v| v.len() as i128));
    out.extend_from_slice(b",\"sequence\":");
    int(out, sequence);
    out.extend_from_slice(b",\"key\":");
    let ke = field(out, rec.key, mode);
    out.extend_from_slice(b",\"key_encoding\":");
    out.extend_from_slice(ke);
    out.extend_from_slice(b",\"value\":");
    let ve = field(out, rec.value, mode);
    out.extend_from_slice(b",\"value_encoding\":");
    out.extend_from_slice(ve);
    out.extend_from_slice(b",\"headers\":[");
    encodings.clear();
    for (n, (hk, hv)) in headers.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.push(b'[');
        json_lossy(out, hk);
        out.push(b',');
        encodings.push(field(out, *hv, mode));
        out.push(b']');
    }
    out.extend_from_slice(b"],\"header_encodings\":[");
    for (n, e) in encodings.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.extend_from_slice(e);
    }
    out.extend_from_slice(b"]}\n");
}

fn decode_into(
    d: &[u8],
    pos: &mut usize,
    end: usize,
    info: &BatchInfo,
    file_json: &[u8],
    mode: Mode,
    out: &mut Vec<u8>,
) -> Option<usize> {
    let mut encodings: Vec<&'static [u8]> = Vec::new();
    parse_records(d, pos, end, info.count, |rec, headers| {
        let ts = record_timestamp(info, rec);
        write_line(out, info, rec, headers, ts, file_json, mode, &mut encodings);
        Some(())
    })
}

/// `kseg dump`'s record selection within one batch (kseg.dump.batch_events.entry_events): records
/// before `from_offset` or outside the time window are skipped, the first record past
/// `to_offset` ends the batch, and at most `max_records` are shown (--limit).
#[derive(Clone, Copy, Default)]
pub struct Selection {
    pub from_offset: Option<i64>,
    pub to_offset: Option<i64>,
    pub from_time: Option<i64>,
    pub to_time: Option<i64>,
}

/// What one `render_part` call did.
#[derive(Debug, PartialEq, Eq)]
pub struct Part {
    /// Where to resume (records byte position, records already consumed), or None: the batch
    /// needs no further call (its end, a record past to_offset, or max_records reached).
    pub resume: Option<(usize, i64)>,
    pub emitted: u64,
    /// The smallest and largest offset shown (for dump's time-window spans).
    pub lo: Option<i128>,
    pub hi: Option<i128>,
}

/// The JSON lines of the records of `d[pos..end]` that `sel` selects, starting after `done`
/// records of the batch's `info.count`, until `out` holds at least `max_out` more bytes (then
/// `resume` says where to go on): bounded output however large the batch.
///
/// None (with `out` as it was) when the batch's records are anything but valid: every record
/// from `pos` to the end is checked even when the output stops early, unless `validated` says
/// an earlier call has checked them already. A caller then takes the core's path for the whole
/// batch, so the core reports the problem exactly as it would have.
#[allow(clippy::too_many_arguments)]
pub fn render_part(
    d: &[u8],
    pos: usize,
    end: usize,
    info: &BatchInfo,
    done: i64,
    validated: bool,
    file_json: &[u8],
    mode: Mode,
    sel: &Selection,
    max_records: Option<u64>,
    max_out: usize,
    out: &mut Vec<u8>,
) -> Option<Part> {
    if done < 0 || done > info.count {
        return None;
    }
    let mark = out.len();
    let remaining = info.count - done;
    let mut part = Part {
        resume: None,
        emitted: 0,
        lo: None,
        hi: None,
    };
    let mut consumed: i64 = 0;
    let mut stopped = false; // a record past to_offset, or --limit reached: the batch ends
    let mut full = false; // max_out reached: the next call resumes after `consumed` records
    let mut encodings: Vec<&'static [u8]> = Vec::new();
    let mut p = pos;
    let finished = parse_records(d, &mut p, end, remaining, |rec, headers| {
        consumed += 1;
        let offset = info.base_offset as i128 + rec.offset_delta;
        let ts = record_timestamp(info, rec);
        if sel.from_offset.is_some_and(|f| offset < f as i128) {
            return Some(());
        }
        if sel.to_offset.is_some_and(|t| offset > t as i128) {
            stopped = true;
            return None;
        }
        if sel.from_time.is_some_and(|f| ts < f as i128)
            || sel.to_time.is_some_and(|t| ts > t as i128)
        {
            return Some(());
        }
        if max_records.is_some_and(|m| part.emitted >= m) {
            stopped = true;
            return None;
        }
        write_line(out, info, rec, headers, ts, file_json, mode, &mut encodings);
        part.emitted += 1;
        part.lo = Some(part.lo.map_or(offset, |v| v.min(offset)));
        part.hi = Some(part.hi.map_or(offset, |v| v.max(offset)));
        if max_records.is_some_and(|m| part.emitted >= m) {
            stopped = true;
            return None;
        }
        if out.len() - mark >= max_out && consumed < remaining {
            full = true;
            return None;
        }
        Some(())
    });
    let ok = if finished.is_some() {
        true
    } else if stopped || full {
        // `p` is just past the record it stopped at: the rest must be valid too
        let mut q = p;
        validated || parse_records(d, &mut q, end, remaining - consumed, |_, _| Some(())).is_some()
    } else {
        false // a problem in the records
    };
    if !ok {
        out.truncate(mark);
        return None;
    }
    if full {
        part.resume = Some((p, done + consumed));
    }
    Some(part)
}
