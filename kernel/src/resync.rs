//! The resync scan's prefilter (kseg.format.resync.scan_candidates, the same rule): the first
//! byte position where an entry Kafka could have written may start, judged from headers alone
//! (no CRC). The core then checks that position with its own walk (CRCs, the chain); this only
//! spares it the positions that cannot pass. tests/dump/test_resync_scan.py compares the two.

use crate::layout::{
    ATTRIBUTES_POS, ATTR_COMPRESSION, ATTR_CONTROL, ATTR_DELETE_HORIZON, ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL, BASE_OFFSET_POS, BATCH_LENGTH_POS, LAST_OFFSET_DELTA_POS, LOG_OVERHEAD,
    MAGIC_POS, MIN_BATCH_LENGTH, RECORDS_COUNT_POS,
};

const MAX_MAGIC: u8 = 2;
const MIN_ENTRY_SIZE: i32 = 14; // kseg.format.magic.MIN_ENTRY_SIZE
const RECORD_OVERHEAD: [i32; 2] = [14, 22]; // kseg.format.legacy.RECORD_OVERHEAD
const KEY_LENGTH_POS: [usize; 2] = [18, 26]; // kseg.format.legacy.KEY_LENGTH_POS
const ATTRIBUTES_KNOWN: i16 =
    ATTR_COMPRESSION | ATTR_TIMESTAMP_TYPE | ATTR_TRANSACTIONAL | ATTR_CONTROL | ATTR_DELETE_HORIZON;
const MAX_CODEC: i16 = 4;

#[inline]
fn i32_at(buf: &[u8], p: usize) -> i32 {
    i32::from_be_bytes([buf[p], buf[p + 1], buf[p + 2], buf[p + 3]])
}

#[inline]
fn i64_at(buf: &[u8], p: usize) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[p..p + 8]);
    i64::from_be_bytes(b)
}

/// kseg.format.resync.plausible: the entry's last offset by its header, or None.
#[inline]
pub fn plausible(buf: &[u8], pos: usize, end: usize, last: i128) -> Option<i128> {
    if end < pos || end - pos < LOG_OVERHEAD + MIN_ENTRY_SIZE as usize {
        return None;
    }
    let magic = buf[pos + MAGIC_POS];
    if magic > MAX_MAGIC {
        return None;
    }
    let offset = i64_at(buf, pos + BASE_OFFSET_POS) as i128;
    let size = i32_at(buf, pos + BATCH_LENGTH_POS);
    if offset <= last || size < MIN_ENTRY_SIZE || size as usize > end - pos - LOG_OVERHEAD {
        return None;
    }
    if magic == 2 {
        if size < MIN_BATCH_LENGTH {
            return None;
        }
        let attributes = i16::from_be_bytes([buf[pos + ATTRIBUTES_POS], buf[pos + ATTRIBUTES_POS + 1]]);
        if attributes & !ATTRIBUTES_KNOWN != 0 || attributes & ATTR_COMPRESSION > MAX_CODEC {
            return None;
        }
        let delta = i32_at(buf, pos + LAST_OFFSET_DELTA_POS);
        if delta < 0 || i32_at(buf, pos + RECORDS_COUNT_POS) < 0 {
            return None;
        }
        return Some(offset + delta as i128);
    }
    let m = magic as usize;
    if size < RECORD_OVERHEAD[m] {
        return None;
    }
    let stop = pos + LOG_OVERHEAD + size as usize;
    let mut at = pos + KEY_LENGTH_POS[m];
    for _ in 0..2 {
        if at + 4 > stop {
            return None;
        }
        let n = i32_at(buf, at);
        at += 4;
        if n == -1 {
            continue;
        }
        if n < 0 || at + n as usize > stop {
            return None;
        }
        at += n as usize;
    }
    if at == stop {
        Some(offset)
    } else {
        None
    }
}

/// kseg.format.resync.candidate
#[inline]
fn candidate(buf: &[u8], pos: usize, end: usize, last: i128) -> bool {
    let here = match plausible(buf, pos, end, last) {
        Some(l) => l,
        None => return false,
    };
    let nxt = pos + LOG_OVERHEAD + i32_at(buf, pos + BATCH_LENGTH_POS) as usize;
    if nxt >= end || plausible(buf, nxt, end, here).is_some() {
        return true;
    }
    buf[nxt..end].iter().all(|&b| b == 0)
}

/// kseg.format.resync.scan_candidates: the first position >= pos where `candidate` holds, or -1.
pub fn scan(buf: &[u8], pos: usize, end: usize, last: i128) -> i64 {
    let end = end.min(buf.len());
    let span = LOG_OVERHEAD + MIN_ENTRY_SIZE as usize;
    if end < span {
        return -1;
    }
    let stop = end - span; // the last position scanned (inclusive)
    let mut p = pos;
    while p <= stop {
        // the magic byte first, eight at a time: in random bytes 253 positions in 256 end here
        match first_small(&buf[p + MAGIC_POS..stop + MAGIC_POS + 1]) {
            Some(i) => p += i,
            None => return -1,
        }
        // in a zeroed region: every position whose size field lies inside the zero run has size
        // 0 (below MIN_ENTRY_SIZE) and cannot start an entry; go to the first that reaches past it
        let size = i32_at(buf, p + BATCH_LENGTH_POS);
        if size >= MIN_ENTRY_SIZE && size as usize <= end - p - LOG_OVERHEAD {
            if candidate(buf, p, end, last) {
                return p as i64;
            }
            p += 1;
            continue;
        }
        if size == 0 && p + 24 <= end && buf[p + 8..p + 24].iter().all(|&b| b == 0) {
            let q = p + 24 + first_nonzero(&buf[p + 24..end]).unwrap_or(end - p - 24);
            p = (q - 11).max(p + 1);
            continue;
        }
        p += 1;
    }
    -1
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The index of the first byte <= MAX_MAGIC in `s`.
#[inline]
fn first_small(s: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i + 8 <= s.len() {
        let x = u64::from_le_bytes(s[i..i + 8].try_into().unwrap());
        // any byte < 3 (exact: "hasless" of Bit Twiddling Hacks, for n <= 128)
        if x.wrapping_sub(ONES * (MAX_MAGIC as u64 + 1)) & !x & HIGHS != 0 {
            break;
        }
        i += 8;
    }
    s[i..].iter().position(|&b| b <= MAX_MAGIC).map(|j| i + j)
}

/// The index of the first byte that is not zero in `s`.
#[inline]
fn first_nonzero(s: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i + 8 <= s.len() {
        if u64::from_le_bytes(s[i..i + 8].try_into().unwrap()) != 0 {
            break;
        }
        i += 8;
    }
    s[i..].iter().position(|&b| b != 0).map(|j| i + j)
}
