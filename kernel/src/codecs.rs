//! The four codecs Kafka writes, decompressed inside the kernel for the Spark decoder: the
//! framings and output bound of kseg.format.compression (gzip members, xerial or raw snappy,
//! Kafka's LZ4 frames incl. KAFKA-3160's header checksum, zstd frames with or without a content
//! size), with Rust crates: flate2 on zlib-rs, snap (as cramjam), lz4-sys (liblz4, as cramjam)
//! for the blocks of the frames parsed here, zstd-safe (libzstd, as cramjam).
//!
//! Only the success path lives here: `decompress` gives the bytes the core's
//! `compression.decompress(cid, data, limit)` returns, or None wherever the core would raise
//! (bad data, truncated, over `limit`, an allocation refused) or might do anything else (a
//! framing not handled here, e.g. gzip's zlib-wrapped alternative). On None the caller hands
//! the batch to the core, which then decompresses it again and says what it says: every error
//! message and finding stays in kseg.format. The output never passes `limit` + 1 bytes (the
//! core's bound: more than `limit` is its "decompressed size exceeds the limit" error), every
//! growth is fallible, and a buffer over KEEP_BYTES is dropped after the batch (as
//! kseg.format.scratch does).

use flate2::{Decompress, FlushDecompress, Status};

pub const NONE: u8 = 0;
pub const GZIP: u8 = 1;
pub const SNAPPY: u8 = 2;
pub const LZ4: u8 = 3;
pub const ZSTD: u8 = 4;

/// kseg.format.scratch.KEEP_BYTES: the largest buffer kept between batches.
const KEEP_BYTES: usize = 4 << 20;
/// kseg.format.compression._GZIP_PIECE: gzip output grows by at most this much a step.
const GZIP_PIECE: usize = 4 << 20;
/// kseg.format.xerial.MAGIC
const XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
const XERIAL_HEADER: usize = 16;
/// a xerial block's big-endian i32 length
const XERIAL_LEN: usize = 4;
/// kseg.format.lz4frame.MAGIC
const LZ4_MAGIC: u32 = 0x184D2204;
const LZ4_UNCOMPRESSED_BIT: u32 = 0x8000_0000;

/// Reused state: the output buffer, the LZ4 block scratch, libzstd's context.
#[derive(Default)]
pub struct Codecs {
    out: Vec<u8>,
    block: Vec<u8>,
    zstd: Option<zstd_safe::DCtx<'static>>,
}

impl std::fmt::Debug for Codecs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Codecs")
            .field("out", &self.out.capacity())
            .field("block", &self.block.capacity())
            .finish()
    }
}

/// Room for `want` more bytes in `v` (exactly: the output bound is the capacity), or None.
#[inline]
fn room(v: &mut Vec<u8>, want: usize) -> Option<()> {
    if v.capacity() - v.len() < want {
        v.try_reserve_exact(want).ok()?;
    }
    Some(())
}

impl Codecs {
    /// The payload of a batch with codec `cid` decompressed (at most `limit` bytes), or None:
    /// the core decides (see the module's doc).
    pub fn decompress(&mut self, cid: u8, data: &[u8], limit: usize) -> Option<&[u8]> {
        self.out.clear();
        let ok = match cid {
            GZIP => gzip(&mut self.out, data, limit),
            SNAPPY => snappy(&mut self.out, data, limit),
            LZ4 => lz4(&mut self.out, &mut self.block, data, limit),
            ZSTD => {
                if self.zstd.is_none() {
                    self.zstd = zstd_safe::DCtx::try_create();
                }
                match self.zstd.as_mut() {
                    Some(ctx) => zstd(ctx, &mut self.out, data, limit),
                    None => None,
                }
            }
            _ => None, // none is never compressed; unknown ids: the core's error
        };
        if ok.is_none() || self.out.len() > limit {
            self.settle();
            return None;
        }
        Some(&self.out)
    }

    /// After a batch: drop a buffer larger than KEEP_BYTES (a rare, large batch must not pin
    /// its memory for the rest of the task).
    pub fn settle(&mut self) {
        if self.out.capacity() > KEEP_BYTES {
            self.out = Vec::new();
        }
        if self.block.capacity() > KEEP_BYTES {
            self.block = Vec::new();
        }
    }
}

/// compression._gzip: gzip members one after another, trailing zero bytes tolerated. A member
/// that is not gzip (zlib's header, which the core's wbits 47 also takes, or garbage): None.
fn gzip(out: &mut Vec<u8>, data: &[u8], limit: usize) -> Option<()> {
    let mut view = data;
    loop {
        if view.len() < 2 || view[0] != 0x1f || view[1] != 0x8b {
            return None;
        }
        let mut d = Decompress::new_gzip(15);
        let mut done = false;
        while !done {
            let want = GZIP_PIECE.min(limit + 1 - out.len().min(limit + 1));
            if want == 0 {
                return None; // over the limit: the core's error
            }
            room(out, want)?;
            let consumed = d.total_in() as usize;
            let before = out.len();
            let status = d
                .decompress_vec(&view[consumed..], out, FlushDecompress::None)
                .ok()?;
            match status {
                Status::StreamEnd => done = true,
                Status::Ok | Status::BufError => {
                    let stuck = d.total_in() as usize == consumed && out.len() == before;
                    if stuck && out.len() < out.capacity() {
                        return None; // the input ran out before the member's end: truncated
                    }
                }
            }
            if out.len() > limit {
                return None;
            }
        }
        let rest = &view[d.total_in() as usize..];
        if rest.iter().all(|&b| b == 0) {
            return Some(());
        }
        view = rest;
    }
}

/// kseg.format.xerial.decompress: snappy-java's framing (header, then big-endian i32 lengths
/// and raw blocks), else one raw block.
fn snappy(out: &mut Vec<u8>, data: &[u8], limit: usize) -> Option<()> {
    if data.len() >= XERIAL_HEADER && &data[..8] == XERIAL_MAGIC {
        let mut pos = XERIAL_HEADER;
        while pos < data.len() {
            let len = data.get(pos..pos + XERIAL_LEN)?;
            let size = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
            pos += XERIAL_LEN;
            let size = usize::try_from(size).ok()?;
            let block = data.get(pos..pos.checked_add(size)?)?;
            snappy_raw(out, block, limit - out.len())?;
            pos += size;
        }
        return Some(());
    }
    snappy_raw(out, data, limit)
}

fn snappy_raw(out: &mut Vec<u8>, block: &[u8], limit: usize) -> Option<()> {
    let claimed = snap::raw::decompress_len(block).ok()?;
    if claimed > limit {
        return None;
    }
    room(out, claimed)?;
    let start = out.len();
    out.resize(start + claimed, 0);
    let n = snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .ok()?;
    out.truncate(start + n);
    Some(())
}

/// xxHash32 of a few bytes (an LZ4 frame descriptor: under 16, the short path only).
fn xxh32_short(data: &[u8]) -> u32 {
    const P1: u32 = 2654435761;
    const P2: u32 = 2246822519;
    const P3: u32 = 3266489917;
    const P4: u32 = 668265263;
    const P5: u32 = 374761393;
    debug_assert!(data.len() < 16);
    let mut h = P5.wrapping_add(data.len() as u32);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        h = h
            .wrapping_add(w.wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
    }
    for &b in chunks.remainder() {
        h = h
            .wrapping_add(u32::from(b).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^= h >> 16;
    h
}

#[inline]
fn u32_le(data: &[u8], pos: usize) -> Option<u32> {
    let b = data.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// One LZ4 block into `out` (at most its length), by liblz4's LZ4_decompress_safe: the call
/// cramjam.lz4.decompress_block_into makes for the core, so the same blocks pass.
fn lz4_block(block: &[u8], out: &mut [u8]) -> Option<usize> {
    let src_len = i32::try_from(block.len()).ok()?;
    let cap = i32::try_from(out.len()).ok()?;
    // SAFETY: LZ4_decompress_safe reads at most `src_len` bytes of `block` and writes at most
    // `cap` bytes to `out` (both lengths of live slices); it never reads or writes outside them
    // whatever the input holds, and returns a negative number for malformed input.
    let n = unsafe {
        lz4_sys::LZ4_decompress_safe(block.as_ptr().cast(), out.as_mut_ptr().cast(), src_len, cap)
    };
    usize::try_from(n).ok()
}

/// kseg.format.lz4frame.decompress: every frame of `data`, its rules in its order.
fn lz4(out: &mut Vec<u8>, block: &mut Vec<u8>, data: &[u8], limit: usize) -> Option<()> {
    let n = data.len();
    let mut pos = 0;
    while pos < n {
        pos = lz4_frame(out, block, data, pos, limit)?;
    }
    Some(())
}

fn lz4_frame(
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    data: &[u8],
    start: usize,
    limit: usize,
) -> Option<usize> {
    let n = data.len();
    if n - start < 7 || u32_le(data, start)? != LZ4_MAGIC {
        return None;
    }
    let (flg, bd) = (data[start + 4], data[start + 5]);
    if flg >> 6 != 1 || flg & 0x01 != 0 {
        return None;
    }
    let block_checksum = flg & 0x10 != 0;
    let content_size = flg & 0x08 != 0;
    let content_checksum = flg & 0x04 != 0;
    let block_max: usize = match (bd >> 4) & 7 {
        4 => 64 << 10,
        5 => 256 << 10,
        6 => 1 << 20,
        7 => 4 << 20,
        _ => return None,
    };
    let desc_end = start + 6 + if content_size { 8 } else { 0 };
    if desc_end >= n {
        return None;
    }
    let hc = data[desc_end];
    let sum = |from: usize| (xxh32_short(&data[from..desc_end]) >> 8) as u8;
    if hc != sum(start + 4) && hc != sum(start) {
        return None; // KAFKA-3160's checksum (over the magic too) is the second
    }
    let mut pos = desc_end + 1;
    if scratch.len() < block_max {
        scratch.try_reserve_exact(block_max - scratch.len()).ok()?;
        scratch.resize(block_max, 0);
    }
    loop {
        let word = u32_le(data, pos)?;
        pos += 4;
        if word == 0 {
            break;
        }
        let size = (word & !LZ4_UNCOMPRESSED_BIT) as usize;
        if size > block_max || pos + size > n {
            return None;
        }
        let block = &data[pos..pos + size];
        pos += size + if block_checksum { 4 } else { 0 };
        let piece: &[u8] = if word & LZ4_UNCOMPRESSED_BIT != 0 {
            block
        } else {
            let produced = lz4_block(block, &mut scratch[..block_max])?;
            &scratch[..produced]
        };
        if out.len() + piece.len() > limit {
            return None;
        }
        room(out, piece.len())?;
        out.extend_from_slice(piece);
    }
    if content_checksum {
        pos += 4;
    }
    if pos > n {
        return None;
    }
    Some(pos)
}

/// compression._zstd (cramjam's zstd, libzstd's streaming decoder): every frame of `data`
/// (skippable ones too), with or without a content size, the output grown geometrically to
/// at most `limit` + 1 bytes (one call when the first frame says its size, up to `limit`). Anything but all input consumed with its last frame complete:
/// None.
fn zstd(
    ctx: &mut zstd_safe::DCtx<'static>,
    out: &mut Vec<u8>,
    data: &[u8],
    limit: usize,
) -> Option<()> {
    if data.is_empty() {
        return None;
    }
    ctx.reset(zstd_safe::ResetDirective::SessionOnly).ok()?;
    // A first frame that says its size (the core's own writer, librdkafka): one call into a
    // buffer of that size, without the streaming decoder's copies. Should it fail (more frames
    // than that, a lie), the streaming decoder below decides.
    if let Ok(Some(size)) = zstd_safe::get_frame_content_size(data) {
        if let Ok(size) = usize::try_from(size) {
            if size <= limit {
                room(out, size)?;
                if ctx.decompress(out, data).is_ok() {
                    return Some(());
                }
                out.clear();
                ctx.reset(zstd_safe::ResetDirective::SessionOnly).ok()?;
            }
        }
    }
    let first = limit
        .saturating_add(1)
        .min((256usize << 10).max(data.len().saturating_mul(8)));
    room(out, first)?;
    let mut input = zstd_safe::InBuffer::around(data);
    loop {
        if out.len() == out.capacity() {
            if out.len() > limit {
                return None;
            }
            let grow = out.len().max(1 << 16).min(limit + 1 - out.len());
            room(out, grow)?;
        }
        let pos = out.len();
        let (hint, written) = {
            let mut ob = zstd_safe::OutBuffer::around_pos(out, pos);
            let hint = ctx.decompress_stream(&mut ob, &mut input).ok()?;
            (hint, ob.pos())
        };
        debug_assert_eq!(out.len(), written);
        if input.pos() == data.len() {
            if hint == 0 {
                return Some(()); // every frame complete, the input used up
            }
            if written == pos && out.len() < out.capacity() {
                return None; // no progress with room left: a truncated frame
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh32_matches_the_reference() {
        // the LZ4 frame descriptor of Kafka's writer: FLG 0x60, BD 0x40 -> HC 0x82
        assert_eq!((xxh32_short(&[0x60, 0x40]) >> 8) as u8, 0x82);
        assert_eq!(xxh32_short(b""), 0x02CC5D05);
    }
}
