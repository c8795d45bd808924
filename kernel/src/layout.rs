//! The Kafka v2 record batch layout, generated from kseg/format/batch.py (_FIELDS, ATTR_*,
//! MIN_RECORD_SIZE), kseg/format/entry.py (the entry prefix) and kseg/format/compression.py
//! (CODEC_NAMES) by kernel/gen_layout.py. Do not edit: regenerate with `python kernel/gen_layout.py`
//! (tests/kernel/test_layout_generated.py fails while this file and the declaration differ).

// --- what every entry of a .log shares (kseg.format.entry) ---

/// offset and size: the bytes an entry's size does not count
pub const LOG_OVERHEAD: usize = 12;

// --- the v2 batch header (kseg.format.batch._FIELDS), in wire order ---
// (an entry's size and magic sit where batch_length and magic do: MAGIC_POS serves both)

/// base_offset: i64 at [0, 8)
pub const BASE_OFFSET_POS: usize = 0;
/// batch_length: i32 at [8, 12)
pub const BATCH_LENGTH_POS: usize = 8;
/// partition_leader_epoch: i32 at [12, 16)
pub const PARTITION_LEADER_EPOCH_POS: usize = 12;
/// magic: i8 at [16, 17)
pub const MAGIC_POS: usize = 16;
/// crc: u32 at [17, 21)
pub const CRC_POS: usize = 17;
/// attributes: i16 at [21, 23)
pub const ATTRIBUTES_POS: usize = 21;
/// last_offset_delta: i32 at [23, 27)
pub const LAST_OFFSET_DELTA_POS: usize = 23;
/// base_timestamp: i64 at [27, 35)
pub const BASE_TIMESTAMP_POS: usize = 27;
/// max_timestamp: i64 at [35, 43)
pub const MAX_TIMESTAMP_POS: usize = 35;
/// producer_id: i64 at [43, 51)
pub const PRODUCER_ID_POS: usize = 43;
/// producer_epoch: i16 at [51, 53)
pub const PRODUCER_EPOCH_POS: usize = 51;
/// base_sequence: i32 at [53, 57)
pub const BASE_SEQUENCE_POS: usize = 53;
/// records_count: i32 at [57, 61)
pub const RECORDS_COUNT_POS: usize = 57;
/// the header: records follow it
pub const HEADER_SIZE: usize = 61;
/// the CRC-32C covers [CRC_COVERAGE_START, end of batch)
pub const CRC_COVERAGE_START: usize = 21;
/// the smallest batch_length: a header and no records
pub const MIN_BATCH_LENGTH: i32 = 49;
/// the magic of a v2 batch
pub const MAGIC: i8 = 2;
/// the fewest bytes a record takes (one per varint field)
pub const MIN_RECORD_SIZE: usize = 7;

// --- the values that mean none, each of its field's type ---

pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
pub const NO_PRODUCER_ID: i64 = -1;
pub const NO_PRODUCER_EPOCH: i16 = -1;
pub const NO_SEQUENCE: i32 = -1;

// --- attribute bits ---

pub const ATTR_COMPRESSION: i16 = 0x07;
pub const ATTR_TIMESTAMP_TYPE: i16 = 0x08;
pub const ATTR_TRANSACTIONAL: i16 = 0x10;
pub const ATTR_CONTROL: i16 = 0x20;
pub const ATTR_DELETE_HORIZON: i16 = 0x40;

/// the codec names by id (attributes & ATTR_COMPRESSION); other ids: the core's
pub const CODEC_NAMES: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

/// A v2 batch header, every field as it is on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

impl Header {
    /// The header at `buf[pos..]`; the caller has seen HEADER_SIZE bytes there (a slice
    /// shorter than that panics).
    #[inline(always)]
    pub fn read(buf: &[u8], pos: usize) -> Header {
        let h: &[u8; HEADER_SIZE] = buf[pos..pos + HEADER_SIZE].try_into().unwrap();
        Header {
            base_offset: i64::from_be_bytes(field(h, BASE_OFFSET_POS)),
            batch_length: i32::from_be_bytes(field(h, BATCH_LENGTH_POS)),
            partition_leader_epoch: i32::from_be_bytes(field(h, PARTITION_LEADER_EPOCH_POS)),
            magic: i8::from_be_bytes(field(h, MAGIC_POS)),
            crc: u32::from_be_bytes(field(h, CRC_POS)),
            attributes: i16::from_be_bytes(field(h, ATTRIBUTES_POS)),
            last_offset_delta: i32::from_be_bytes(field(h, LAST_OFFSET_DELTA_POS)),
            base_timestamp: i64::from_be_bytes(field(h, BASE_TIMESTAMP_POS)),
            max_timestamp: i64::from_be_bytes(field(h, MAX_TIMESTAMP_POS)),
            producer_id: i64::from_be_bytes(field(h, PRODUCER_ID_POS)),
            producer_epoch: i16::from_be_bytes(field(h, PRODUCER_EPOCH_POS)),
            base_sequence: i32::from_be_bytes(field(h, BASE_SEQUENCE_POS)),
            records_count: i32::from_be_bytes(field(h, RECORDS_COUNT_POS)),
        }
    }
}

/// The N bytes of a field at `pos` of a header (N: the field's size, from its type).
#[inline(always)]
fn field<const N: usize>(h: &[u8; HEADER_SIZE], pos: usize) -> [u8; N] {
    h[pos..pos + N].try_into().unwrap()
}
