//! Records of a v2 batch -> JSON Lines, byte for byte what `kseg dump -f json` prints.
//!
//! The decode mirrors kseg.format.batch.decode_records: it succeeds exactly where that function
//! succeeds and gives up (returns None) wherever it would raise, without saying why: the Python
//! core then decodes the batch itself and reports the problem. Arithmetic is in i128 because the
//! Python core's is unbounded (a 64-bit delta plus a 64-bit base does not fit an i64).
//!
//! Nothing here allocates by a count read from disk, and nothing grows a buffer infallibly: a
//! record's headers are checked in place and read again where they are written (no list of
//! them), and a line's room is reserved fallibly (`room`) from an upper bound of its length
//! before any byte of it is written. A line whose bound passes a part's size is written a part
//! at a time by `render_part` (its headers, each reserved on its own), so the output buffer
//! holds about a part, plus a record's head (6 bytes per byte of its key and value at most),
//! whatever a record holds; a reservation that fails is NoMemory
//! (Python's MemoryError, the core's out-of-memory line), never the abort of a failed `Vec`
//! growth.

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

/// An allocation the kernel could not make: the caller raises Python's MemoryError.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoMemory;

/// Room for `n` more bytes in `out` (so that appending up to `n` bytes cannot reallocate), or
/// NoMemory: never the process abort of an infallible growth that fails.
#[inline]
pub fn room(out: &mut Vec<u8>, n: usize) -> Result<(), NoMemory> {
    out.try_reserve(n).map_err(|_| NoMemory)
}

/// The longest record line (an upper bound of it, `line_bound`) the kernel writes whole: a
/// longer one (or one longer than a part) `render_part` writes a part at a time, and the
/// whole-batch `records_json` leaves to the core (31M empty headers: a 465 MB line, ~1.6 GB of
/// bound).
pub const MAX_LINE: usize = 16 << 20;

/// An upper bound of the bytes of a record's JSON line (write_line): at most 6 bytes of JSON per
/// byte of key, value, header key or value (a control byte as \u00XX; base64 and hex less;
/// an invalid UTF-8 sequence, at least one byte, is 3), 640 bytes of names, five integers and
/// two encodings, and 49 per header (its brackets, commas, quotes or null or a sha256 digest,
/// and its encoding).
#[inline]
pub fn line_bound(rec: &Rec<'_>, headers: &Headers<'_>, file_json: &[u8]) -> usize {
    (640 + file_json.len())
        .saturating_add(rec.size.saturating_mul(6))
        .saturating_add(headers.len().saturating_mul(52))
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
    json_inner(out, s);
    out.push(b'"');
}

/// The escaped text of a JSON string, without its quotes.
fn json_inner(out: &mut Vec<u8>, s: &[u8]) {
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
}

/// The bytes of U+FFFD, the replacement character.
pub const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

/// Python's bytes.decode("utf-8", "replace") as a JSON string (both replace each maximal
/// invalid subpart with one U+FFFD, as String::from_utf8_lossy does), written in place: no
/// copy of the text.
fn json_lossy(out: &mut Vec<u8>, data: &[u8]) {
    if std::str::from_utf8(data).is_ok() {
        return json_text(out, data); // the common case, as fast as before
    }
    out.push(b'"');
    for chunk in data.utf8_chunks() {
        json_inner(out, chunk.valid().as_bytes());
        if !chunk.invalid().is_empty() {
            out.extend_from_slice(REPLACEMENT);
        }
    }
    out.push(b'"');
}

/// kseg.dump.payload's printable text: UTF-8 without control bytes other than \t \n \r.
fn printable(data: &[u8]) -> bool {
    !data
        .iter()
        .any(|&b| (b < 0x20 && b != 0x09 && b != 0x0A && b != 0x0D) || b == 0x7F)
        && std::str::from_utf8(data).is_ok()
}

const UTF8: &[u8] = b"\"utf8\"";
const BASE64: &[u8] = b"\"base64\"";

/// The encoding's JSON of a value `field` writes (for a record's header_encodings, read again
/// from the headers rather than kept in a list as long as their count).
fn encoding(data: Option<&[u8]>, mode: Mode) -> &'static [u8] {
    match (data, mode) {
        (None, _) => b"null",
        (Some(_), Mode::Base64) => b"\"base64\"",
        (Some(d), Mode::Auto) => {
            if printable(d) {
                b"\"utf8\""
            } else {
                b"\"base64\""
            }
        }
        (Some(_), Mode::Utf8) => b"\"utf8\"",
        (Some(_), Mode::Hex) => b"\"hex\"",
        (Some(_), Mode::Redact) => b"\"redacted\"",
    }
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

/// Append the JSON line of every record in `d[pos..end]` to `out`; on any problem (or a line
/// longer than MAX_LINE) truncate `out` back and return Ok(None). `file_json` is the file name
/// already as a JSON string.
pub fn records_json(
    d: &[u8],
    mut pos: usize,
    end: usize,
    info: &BatchInfo,
    file_json: &[u8],
    mode: Mode,
    out: &mut Vec<u8>,
) -> Result<Option<usize>, NoMemory> {
    let mark = out.len();
    let mut oom = false;
    let r = parse_records(d, &mut pos, end, info.count, |rec, headers| {
        if line_bound(rec, headers, file_json) > MAX_LINE {
            return None;
        }
        let ts = record_timestamp(info, rec);
        if write_line(out, info, rec, headers, ts, file_json, mode).is_err() {
            oom = true;
            return None;
        }
        Some(())
    });
    if r.is_none() {
        out.truncate(mark);
    }
    if oom {
        return Err(NoMemory);
    }
    Ok(r)
}

/// One record's fields, as kseg.format.batch.iter_record_chunks reads them.
pub struct Rec<'a> {
    pub ts_delta: i128,
    pub offset_delta: i128,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// the record's bytes after its length varint
    pub size: usize,
    /// where the record (its length varint) starts
    pub start: usize,
}

/// A record's headers, checked, where they lie in the records' bytes: `iter()` reads them
/// again ((key bytes, value or None) each) rather than a list of them being kept, whose length
/// would be a count read from disk (31M headers of 2 bytes each: a 1 GB list).
#[derive(Clone, Copy)]
pub struct Headers<'a> {
    d: &'a [u8],
    start: usize,
    end: usize,
    count: usize,
}

impl<'a> Headers<'a> {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn iter(&self) -> HeaderIter<'a> {
        self.iter_from(self.start, self.count)
    }

    /// The last `left` headers, the first of them at `pos` (a HeaderIter's `pos` before it).
    fn iter_from(&self, pos: usize, left: usize) -> HeaderIter<'a> {
        HeaderIter {
            d: self.d,
            pos: pos.clamp(self.start, self.end),
            end: self.end,
            left: left.min(self.count),
        }
    }
}

/// The headers of a record, read again (parse_records has checked every one of them).
pub struct HeaderIter<'a> {
    d: &'a [u8],
    pos: usize,
    end: usize,
    left: usize,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let key = bytes_field(self.d, &mut self.pos, self.end)??;
        let value = bytes_field(self.d, &mut self.pos, self.end)?;
        Some((key, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// Walk the `count` records of `d[pos..end]` exactly as kseg.format.batch.iter_record_chunks
/// does, calling `f` for each; None (without saying why) wherever the core would raise, or when
/// `f` gives up. `f` sees a record only after all of its fields have been checked, but the
/// records of the batch after it are not yet: a caller that must not keep a partial batch
/// undoes what `f` did when this returns None. Returns the number of records. Allocates
/// nothing.
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
    let mut i: i64 = 0;
    while i < count {
        let (rec, headers, rec_end) = record_at(d, *pos, end)?;
        *pos = headers.start;
        for _ in 0..headers.count {
            bytes_field(d, pos, rec_end)??; // a null header key is a lie: None
            bytes_field(d, pos, rec_end)?;
        }
        if *pos != rec_end {
            return None;
        }
        f(&rec, &headers)?;
        i += 1;
    }
    if *pos != end {
        return None;
    }
    Some(i as usize)
}

/// The record at `d[pos..end]` up to its headers, which are not read (parse_records checks
/// them), and where it ends; None where the core would raise.
#[inline]
fn record_at(d: &[u8], pos: usize, end: usize) -> Option<(Rec<'_>, Headers<'_>, usize)> {
    let mut p = pos;
    if p >= end {
        return None;
    }
    let length = varint(d, &mut p, end)?;
    if length < 6 || length > (end - p) as i128 {
        return None;
    }
    let size = length as usize;
    let rec_end = p + size;
    p += 1; // attributes: unused
    let ts_delta = varint(d, &mut p, rec_end)?;
    let offset_delta = varint(d, &mut p, rec_end)?;
    let key = bytes_field(d, &mut p, rec_end)?;
    let value = bytes_field(d, &mut p, rec_end)?;
    let hcount = varint(d, &mut p, rec_end)?;
    // each header takes at least 2 bytes: the count is bounded by the record's bytes
    if hcount < 0 || 2 * hcount > (rec_end - p) as i128 {
        return None;
    }
    let rec = Rec {
        ts_delta,
        offset_delta,
        key,
        value,
        size,
        start: pos,
    };
    let headers = Headers {
        d,
        start: p,
        end: rec_end,
        count: hcount as usize,
    };
    Some((rec, headers, rec_end))
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

/// One record's JSON line (kseg.render.dump_json.record_json_maker), after reserving its
/// `line_bound` (the only allocation: none of the appends below can reallocate).
#[inline]
fn write_line(
    out: &mut Vec<u8>,
    info: &BatchInfo,
    rec: &Rec<'_>,
    headers: &Headers<'_>,
    timestamp: i128,
    file_json: &[u8],
    mode: Mode,
) -> Result<(), NoMemory> {
    room(out, line_bound(rec, headers, file_json))?;
    #[cfg(debug_assertions)]
    let (mark, cap) = (out.len(), out.capacity());
    line_head(out, info, rec, timestamp, file_json, mode);
    // the encodings of the first 64 headers, kept from their writing (1: base64 in auto mode);
    // the others' are worked out again
    let mut base64_bits: u64 = 0;
    for (n, (hk, hv)) in headers.iter().enumerate() {
        let e = header(out, n > 0, hk, hv, mode);
        if n < 64 && e == BASE64 {
            base64_bits |= 1 << n;
        }
    }
    out.extend_from_slice(HEADERS_END);
    for (n, (_, hv)) in headers.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        let e = match (n < 64, mode, hv) {
            (true, Mode::Auto, Some(_)) if base64_bits & (1 << n) == 0 => UTF8,
            (true, Mode::Auto, Some(_)) => BASE64,
            _ => encoding(hv, mode),
        };
        out.extend_from_slice(e);
    }
    out.extend_from_slice(LINE_END);
    #[cfg(debug_assertions)]
    {
        debug_assert_eq!(out.capacity(), cap, "a line outgrew its reserved room");
        debug_assert!(out.len() - mark <= line_bound(rec, headers, file_json));
    }
    Ok(())
}

const HEADERS_END: &[u8] = b"],\"header_encodings\":[";
const LINE_END: &[u8] = b"]}\n";

/// A line's bytes up to its headers (`"headers":[` included): at most 640 + the file name + 6
/// per byte of key and value (see line_bound).
#[inline]
fn line_head(
    out: &mut Vec<u8>,
    info: &BatchInfo,
    rec: &Rec<'_>,
    timestamp: i128,
    file_json: &[u8],
    mode: Mode,
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
}

/// One header of a line's list (`[key,value]`, after a comma unless first): at most 6 per byte
/// of key and value + 40.
#[inline]
fn header(
    out: &mut Vec<u8>,
    comma: bool,
    hk: &[u8],
    hv: Option<&[u8]>,
    mode: Mode,
) -> &'static [u8] {
    if comma {
        out.push(b',');
    }
    out.push(b'[');
    json_lossy(out, hk);
    out.push(b',');
    let e = field(out, hv, mode);
    out.push(b']');
    e
}

/// Where a line longer than MAX_LINE stopped part-way. `step`: 0 nothing of it written; 1 + i
/// (i <= n, n headers): its head and i headers; n + 2 + i: its headers' list closed and i of
/// their encodings. `hpos`: where the next header to read starts in the records' bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Within {
    pub step: usize,
    pub hpos: usize,
}

/// The line of `rec` from `at` on, a header at a time, each reserving its own room; stops
/// before a header once `out` holds `max_out` bytes more than at `mark`. Ok(None): the line is
/// complete; Ok(Some(at)): call again from `at` (with this record) for the rest.
#[allow(clippy::too_many_arguments)]
fn line_part(
    out: &mut Vec<u8>,
    info: &BatchInfo,
    rec: &Rec<'_>,
    headers: &Headers<'_>,
    timestamp: i128,
    file_json: &[u8],
    mode: Mode,
    at: Within,
    mark: usize,
    max_out: usize,
) -> Result<Option<Within>, NoMemory> {
    let n = headers.len();
    let (mut step, mut hpos) = (at.step, at.hpos);
    let full = |out: &Vec<u8>| out.len() - mark >= max_out;
    if step == 0 {
        let fields = rec.key.map_or(0, |k| k.len()) + rec.value.map_or(0, |v| v.len());
        room(out, 640 + file_json.len() + fields.saturating_mul(6))?;
        line_head(out, info, rec, timestamp, file_json, mode);
        (step, hpos) = (1, headers.start);
    }
    if step <= n {
        let mut it = headers.iter_from(hpos, n + 1 - step);
        while step <= n {
            if full(out) {
                return Ok(Some(Within { step, hpos }));
            }
            let Some((hk, hv)) = it.next() else { break };
            room(
                out,
                (hk.len() + hv.map_or(0, |v| v.len())).saturating_mul(6) + 40,
            )?;
            header(out, step > 1, hk, hv, mode);
            (step, hpos) = (step + 1, it.pos);
        }
    }
    if step == n + 1 {
        room(out, HEADERS_END.len())?;
        out.extend_from_slice(HEADERS_END);
        (step, hpos) = (n + 2, headers.start);
    }
    let mut it = headers.iter_from(hpos, 2 * n + 2 - step);
    while step <= 2 * n + 1 {
        if full(out) {
            return Ok(Some(Within { step, hpos }));
        }
        let Some((_, hv)) = it.next() else { break };
        room(out, 12)?;
        if step > n + 2 {
            out.push(b',');
        }
        out.extend_from_slice(encoding(hv, mode));
        (step, hpos) = (step + 1, it.pos);
    }
    room(out, LINE_END.len())?;
    out.extend_from_slice(LINE_END);
    Ok(None)
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
    /// Where to resume (records byte position, records already consumed, and within the
    /// record there, where its line stopped), or None: the batch needs no further call (its
    /// end, a record past to_offset, or max_records reached).
    pub resume: Option<(usize, i64, Within)>,
    pub emitted: u64,
    /// The smallest and largest offset shown (for dump's time-window spans).
    pub lo: Option<i128>,
    pub hi: Option<i128>,
}

/// The JSON lines of the records of `d[pos..end]` that `sel` selects, starting after `done`
/// records of the batch's `info.count`, until `out` holds at least `max_out` more bytes (then
/// `resume` says where to go on): bounded output however large the batch. A line that may be
/// longer than `max_out` (or MAX_LINE; by its line_bound) is written a header at a time and may
/// stop part-way: `within` (step > 0) says
/// where in the line of the record at `pos` a call goes on (that record was selected and
/// counted as emitted by the call that began its line).
///
/// Ok(None) (with `out` as it was) when the batch's records are anything but valid: every
/// record from `pos` to the end is checked even when the output stops early, unless `validated`
/// says an earlier call has checked them already. A caller then takes the core's path for the
/// whole batch, so the core reports the problem exactly as it would have. Err(NoMemory) (with
/// `out` as it was): room for a line could not be reserved.
#[allow(clippy::too_many_arguments)]
pub fn render_part(
    d: &[u8],
    pos: usize,
    end: usize,
    info: &BatchInfo,
    done: i64,
    within: Within,
    validated: bool,
    file_json: &[u8],
    mode: Mode,
    sel: &Selection,
    max_records: Option<u64>,
    max_out: usize,
    out: &mut Vec<u8>,
) -> Result<Option<Part>, NoMemory> {
    if done < 0 || done > info.count || (within.step > 0 && !validated) {
        return Ok(None);
    }
    let max_out = max_out.max(1); // every call makes progress
    let mark = out.len();
    let remaining = info.count - done;
    let mut part = Part {
        resume: None,
        emitted: 0,
        lo: None,
        hi: None,
    };
    let mut consumed: i64 = 0; // records seen, the one whose line stopped part-way included
    let mut stopped = false; // a record past to_offset, or --limit reached: the batch ends
    let mut full = false; // max_out reached: the next call resumes at `resume`
    let mut oom = false;
    let mut cut: Option<(usize, Within)> = None; // a line stopped part-way: its record, where
    let mut go_on = (within.step > 0).then_some(within);
    let mut on_record = |rec: &Rec<'_>, headers: &Headers<'_>| {
        consumed += 1;
        let ts = record_timestamp(info, rec);
        let at = match go_on.take() {
            Some(at) => Some(at), // the rest of a line an earlier call began: selected then
            None => {
                let offset = info.base_offset as i128 + rec.offset_delta;
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
                part.emitted += 1;
                part.lo = Some(part.lo.map_or(offset, |v| v.min(offset)));
                part.hi = Some(part.hi.map_or(offset, |v| v.max(offset)));
                // a line that may be longer than a part: a header at a time
                let bound = line_bound(rec, headers, file_json);
                (bound > max_out.min(MAX_LINE)).then_some(Within::default())
            }
        };
        let written = match at {
            None => write_line(out, info, rec, headers, ts, file_json, mode).map(|_| None),
            Some(at) => line_part(
                out, info, rec, headers, ts, file_json, mode, at, mark, max_out,
            ),
        };
        match written {
            Err(_) => {
                oom = true;
                return None;
            }
            Ok(Some(next)) => {
                cut = Some((rec.start, next));
                full = true;
                return None;
            }
            Ok(None) => {}
        }
        if max_records.is_some_and(|m| part.emitted >= m) {
            stopped = true;
            return None;
        }
        if out.len() - mark >= max_out && consumed < remaining {
            full = true;
            return None;
        }
        Some(())
    };
    let mut p = pos;
    let finished = if within.step > 0 {
        // the record whose line goes on was checked by the first call: only its fields up to
        // the headers are read again (checking all of it again each part was quadratic)
        match record_at(d, pos, end) {
            Some((rec, headers, rec_end)) if remaining > 0 => {
                p = rec_end;
                on_record(&rec, &headers)
                    .and_then(|_| parse_records(d, &mut p, end, remaining - 1, &mut on_record))
            }
            _ => return Ok(None),
        }
    } else {
        parse_records(d, &mut p, end, remaining, &mut on_record)
    };
    if oom {
        out.truncate(mark);
        return Err(NoMemory);
    }
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
        return Ok(None);
    }
    if full {
        part.resume = Some(match cut {
            Some((at, within)) => (at, done + consumed - 1, within),
            None => (p, done + consumed, Within::default()),
        });
    }
    Ok(Some(part))
}
