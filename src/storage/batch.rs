//! Zero-copy view and validation of Kafka RecordBatch v2 wire bytes.
//!
//! Layout (big-endian), byte offsets within a batch:
//!
//! | field                | offset | size |
//! |----------------------|--------|------|
//! | baseOffset           | 0      | 8    |
//! | batchLength          | 8      | 4    |
//! | partitionLeaderEpoch | 12     | 4    |
//! | magic                | 16     | 1    |
//! | crc (CRC32C)         | 17     | 4    |
//! | attributes           | 21     | 2    |
//! | lastOffsetDelta      | 23     | 4    |
//! | baseTimestamp        | 27     | 8    |
//! | maxTimestamp         | 35     | 8    |
//! | producerId           | 43     | 8    |
//! | producerEpoch        | 51     | 2    |
//! | baseSequence         | 53     | 4    |
//! | recordsCount         | 57     | 4    |
//! | records...           | 61     |      |
//!
//! `batchLength` counts the bytes after the batchLength field, so the whole
//! batch is `batchLength + 12` bytes. The CRC covers bytes 21..end, so the
//! base offset and the partition leader epoch can be rewritten without
//! recomputing it.

use super::log_config::TimestampType;

/// Size in bytes of the fixed RecordBatch v2 header (baseOffset through recordsCount).
pub const RECORD_BATCH_HEADER_BYTES: usize = 61;

/// Bytes before the batchLength-counted part: baseOffset (8) + batchLength (4).
/// Kafka calls this `LOG_OVERHEAD`.
pub const LOG_OVERHEAD_BYTES: usize = 12;

/// Smallest legal `batchLength` value (a header with zero records): 61 - 12 = 49 bytes.
pub const MIN_BATCH_LENGTH: i32 = (RECORD_BATCH_HEADER_BYTES - LOG_OVERHEAD_BYTES) as i32;

/// Byte offset of the magic field; it sits at byte 16 in every message format
/// version (v0/v1 message sets too), so it can be checked before parsing.
pub const MAGIC_OFFSET: usize = 16;

/// Byte offset of the crc field.
pub const CRC_OFFSET: usize = 17;

/// Byte offset of the attributes field, where the CRC32C-covered part begins.
pub const ATTRIBUTES_OFFSET: usize = 21;

/// Byte offset of the maxTimestamp field.
pub const MAX_TIMESTAMP_OFFSET: usize = 35;

/// The only message format version this broker stores (RecordBatch v2, KIP-98).
pub const CURRENT_MAGIC: i8 = 2;

/// Default of Kafka's `message.max.bytes` (bytes): 1048588.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1_048_588;

const ATTR_COMPRESSION_MASK: i16 = 0x07;
const ATTR_TIMESTAMP_TYPE: i16 = 0x08;
const ATTR_TRANSACTIONAL: i16 = 0x10;
const ATTR_CONTROL: i16 = 0x20;
const ATTR_DELETE_HORIZON: i16 = 0x40;

/// Errors found while validating Produce record bytes. Each maps to a Kafka
/// error code in `crate::error` (the one place errors map to codes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// Malformed or partial batch, bad length or CRC mismatch.
    /// Kafka `CORRUPT_MESSAGE` (error code 2).
    #[error("corrupt message: {0}")]
    CorruptMessage(Corruption),
    /// A batch larger (bytes, including the 12-byte offset/length prefix) than
    /// `max` (Kafka `message.max.bytes` / topic `max.message.bytes`).
    /// Kafka `MESSAGE_TOO_LARGE` (error code 10).
    #[error("batch of {size} bytes exceeds max message size {max} bytes")]
    MessageTooLarge {
        /// Total batch size in bytes.
        size: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// Structurally valid batch that breaks a record-level rule (count/offset
    /// range mismatch, control batch from a client, bad sequence).
    /// Kafka `INVALID_RECORD` (error code 87).
    #[error("invalid record: {0}")]
    InvalidRecord(RecordRule),
    /// A magic byte below 2: magic 0/1 (legacy message sets; a negative
    /// byte is treated the same) are refused as Kafka's
    /// `ProduceRequest.validateRecords` does for Produce v3+:
    /// `INVALID_RECORD` (87).
    #[error("unsupported magic {0}")]
    LegacyMagic(i8),
    /// A magic byte above 2, unknown to Kafka: `CORRUPT_MESSAGE` (2).
    #[error("unsupported magic {0}")]
    UnknownMagic(i8),
    /// A record timestamp outside the topic's window
    /// (`message.timestamp.before.max.ms` / `.after.max.ms`, CreateTime).
    /// Kafka `INVALID_TIMESTAMP` (error code 32).
    #[error("{0}")]
    InvalidTimestamp(TimestampOutOfRange),
}

/// What is wrong with a batch answered CORRUPT_MESSAGE (2). Positions are
/// byte offsets into the Produce `records`; sizes are bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Corruption {
    /// The partition's `records` are empty.
    #[error("empty records")]
    EmptyRecords,
    /// Fewer bytes than a batch header after the last whole batch.
    #[error("{len} trailing bytes at position {position} are not a whole batch")]
    TrailingBytes {
        /// Where the partial batch starts.
        position: usize,
        /// Bytes left.
        len: usize,
    },
    /// Fewer bytes than the 61-byte RecordBatch v2 header.
    #[error("batch header needs {} bytes, got {len}", RECORD_BATCH_HEADER_BYTES)]
    HeaderTooShort {
        /// Bytes given.
        len: usize,
    },
    /// A batchLength below [`MIN_BATCH_LENGTH`].
    #[error(
        "batchLength {batch_length} at position {position} is below the minimum {}",
        MIN_BATCH_LENGTH
    )]
    BatchLengthTooSmall {
        /// Where the batch starts.
        position: usize,
        /// The batchLength field.
        batch_length: i32,
    },
    /// A batchLength that does not fit the platform's sizes.
    #[error("batchLength overflow")]
    BatchLengthOverflow,
    /// A batch claiming more bytes than the records hold.
    #[error("batch at position {position} claims {size} bytes but only {remaining} remain")]
    Truncated {
        /// Where the batch starts.
        position: usize,
        /// batchLength + 12.
        size: usize,
        /// Bytes from `position` to the end of the records.
        remaining: usize,
    },
    /// The stored CRC32C is not the one computed over attributes..end.
    #[error(
        "CRC32C mismatch at position {position}: stored {stored:#010x}, computed {computed:#010x}"
    )]
    CrcMismatch {
        /// Where the batch starts.
        position: usize,
        /// The batch's CRC field.
        stored: u32,
        /// The CRC32C of its bytes.
        computed: u32,
    },
    /// Compression codec bits 5..=7 (attributes & 0x07), unknown to Kafka.
    #[error("unknown compression codec {codec}")]
    UnknownCompression {
        /// The codec bits.
        codec: u8,
    },
    /// A validated batch found outside the records when its bytes are taken
    /// for the append.
    #[error("batch outside the records")]
    OutsideRecords,
    /// A validated batch found outside the records when the log assigns its
    /// offsets.
    #[error("batch at {position} of {size} bytes is outside the {records_len}-byte records")]
    OutsideRecordsAt {
        /// Where the batch starts.
        position: usize,
        /// Its size.
        size: usize,
        /// Size of the records.
        records_len: usize,
    },
    /// A batch whose header, read again for the append, disagrees with its
    /// validated size (or has a negative lastOffsetDelta).
    #[error("batch at {position} does not match its validated size")]
    SizeMismatch {
        /// Where the batch starts.
        position: usize,
    },
    /// The records do not decompress, or cannot be compressed with the
    /// topic's codec.
    #[error("{0}")]
    Recompress(RecompressError),
}

/// The record-level rule a batch breaks, answered INVALID_RECORD (87), as
/// Kafka's `LogValidator.validateBatch` checks client appends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordRule {
    /// recordsCount < 1 or lastOffsetDelta < 0.
    #[error("invalid record count {records_count} / lastOffsetDelta {last_offset_delta}")]
    RecordCount {
        /// The recordsCount field.
        records_count: i32,
        /// The lastOffsetDelta field.
        last_offset_delta: i32,
    },
    /// lastOffsetDelta + 1 != recordsCount.
    #[error("inconsistent batch: lastOffsetDelta {last_offset_delta} but {records_count} records")]
    OffsetDeltaMismatch {
        /// The lastOffsetDelta field.
        last_offset_delta: i32,
        /// The recordsCount field.
        records_count: i32,
    },
    /// A control batch from a client.
    #[error("clients are not allowed to write control records")]
    ControlBatch,
    /// A producer id with a negative baseSequence.
    #[error("invalid sequence {base_sequence} for producer id {producer_id}")]
    InvalidSequence {
        /// The baseSequence field.
        base_sequence: i32,
        /// The producer id.
        producer_id: i64,
    },
    /// The records decompress to more than allowed.
    #[error("{0}")]
    Recompress(RecompressError),
}

/// Errors of decompression and recompression (`storage::recompress`), mapped
/// to the batch error the producer sees (`From<RecompressError> for
/// BatchError` there). Defined here, below `recompress`, so that
/// [`Corruption`] and [`RecordRule`] can carry it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecompressError {
    /// The records do not decompress with the batch's codec, or a stored
    /// batch cannot be read as one (CORRUPT_MESSAGE).
    #[error("the batch's records are corrupt: {0}")]
    Corrupt(String),
    /// A record's framing is wrong: a length or count its bytes cannot
    /// hold, fields that do not fill the record, records that do not add
    /// up to the batch's count (INVALID_RECORD, as Kafka's
    /// `InvalidRecordException` from `DefaultRecord.readFrom`).
    #[error("malformed record: {0}")]
    Framing(String),
    /// The records decompress to more than allowed (INVALID_RECORD).
    #[error("a record of {size} bytes exceeds max.decompressed.message.bytes {max}")]
    RecordTooLarge {
        /// Decompressed size of the record (bytes).
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The records decompress to more than the limit for the whole batch
    /// (INVALID_RECORD).
    #[error("the batch decompresses to more than {0} bytes")]
    TooLarge(u64),
    /// Compressing with the topic's codec failed (CORRUPT_MESSAGE: the batch
    /// is not stored).
    #[error("cannot compress the batch with the topic's codec: {0}")]
    Compress(String),
}

/// The bound of a CreateTime topic's timestamp window that a record crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampBound {
    /// Too old: `message.timestamp.before.max.ms`.
    BeforeMax,
    /// Too far in the future: `message.timestamp.after.max.ms`.
    AfterMax,
}

impl TimestampBound {
    /// The config's name part: "before" or "after".
    pub fn side(self) -> &'static str {
        match self {
            TimestampBound::BeforeMax => "before",
            TimestampBound::AfterMax => "after",
        }
    }
}

/// A record timestamp outside [`earliest`, `latest`] (ms since the epoch),
/// answered INVALID_TIMESTAMP (32), with Kafka's message text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Timestamp {timestamp} of a message in the batch is out of range. The timestamp \
     should be within [{earliest}, {latest}] (message.timestamp.{}.max.ms)",
    .bound.side()
)]
pub struct TimestampOutOfRange {
    /// The record's timestamp (ms).
    pub timestamp: i64,
    /// now - `message.timestamp.before.max.ms` (ms).
    pub earliest: i64,
    /// now + `message.timestamp.after.max.ms` (ms).
    pub latest: i64,
    /// The bound crossed.
    pub bound: TimestampBound,
}

/// The 61-byte RecordBatch v2 header, decoded (values copied out of the wire bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Offset of the first record (rewritten by the broker on append).
    pub base_offset: i64,
    /// Bytes after the batchLength field; total batch size is this + 12.
    pub batch_length: i32,
    /// Leader epoch stamped by the broker (KIP-101); -1 from producers.
    pub partition_leader_epoch: i32,
    /// Message format version; 2 for RecordBatch.
    pub magic: i8,
    /// CRC32C of bytes 21..end of the batch.
    pub crc: u32,
    /// Bit field: compression (bits 0-2), timestamp type (bit 3), transactional
    /// (bit 4), control (bit 5), delete horizon (bit 6, KIP-534).
    pub attributes: i16,
    /// Last record offset minus base offset.
    pub last_offset_delta: i32,
    /// Timestamp (ms) of the first record.
    pub base_timestamp: i64,
    /// Largest record timestamp (ms) in the batch, or the log append time.
    pub max_timestamp: i64,
    /// Idempotent/transactional producer id (KIP-98), -1 if none.
    pub producer_id: i64,
    /// Producer epoch, -1 if none.
    pub producer_epoch: i16,
    /// Sequence number of the first record, -1 if none.
    pub base_sequence: i32,
    /// Number of records in the batch.
    pub records_count: i32,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        a.copy_from_slice(s);
    }
    i64::from_be_bytes(a)
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        a.copy_from_slice(s);
    }
    i32::from_be_bytes(a)
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    let mut a = [0u8; 2];
    if let Some(s) = b.get(at..at + 2) {
        a.copy_from_slice(s);
    }
    i16::from_be_bytes(a)
}

impl BatchHeader {
    /// Takes at least 61 bytes starting at a batch; gives the decoded header.
    /// Does not check magic, lengths or CRC (see [`validate_batches`]).
    /// Fewer than 61 bytes → [`BatchError::CorruptMessage`] (Kafka CORRUPT_MESSAGE).
    pub fn parse(buf: &[u8]) -> Result<BatchHeader, BatchError> {
        if buf.len() < RECORD_BATCH_HEADER_BYTES {
            return Err(BatchError::CorruptMessage(Corruption::HeaderTooShort {
                len: buf.len(),
            }));
        }
        Ok(BatchHeader {
            base_offset: be_i64(buf, 0),
            batch_length: be_i32(buf, 8),
            partition_leader_epoch: be_i32(buf, 12),
            magic: buf[MAGIC_OFFSET] as i8,
            crc: be_i32(buf, CRC_OFFSET) as u32,
            attributes: be_i16(buf, ATTRIBUTES_OFFSET),
            last_offset_delta: be_i32(buf, 23),
            base_timestamp: be_i64(buf, 27),
            max_timestamp: be_i64(buf, MAX_TIMESTAMP_OFFSET),
            producer_id: be_i64(buf, 43),
            producer_epoch: be_i16(buf, 51),
            base_sequence: be_i32(buf, 53),
            records_count: be_i32(buf, 57),
        })
    }

    /// Gives the compression codec id (attributes & 7): 0 none, 1 gzip,
    /// 2 snappy, 3 lz4, 4 zstd.
    pub fn compression(&self) -> u8 {
        (self.attributes & ATTR_COMPRESSION_MASK) as u8
    }

    /// Gives whether the batch belongs to a transaction (attributes bit 4, KIP-98).
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    /// Gives whether this is a control batch (commit/abort marker; attributes bit 5).
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    /// Gives whether the delete-horizon flag is set (attributes bit 6, KIP-534).
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes & ATTR_DELETE_HORIZON != 0
    }

    /// Gives the timestamp type from attributes bit 3: CreateTime or
    /// LogAppendTime (Kafka `message.timestamp.type`).
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & ATTR_TIMESTAMP_TYPE != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Gives the total batch size in bytes (batchLength + 12); 0 if batchLength is negative.
    pub fn total_size(&self) -> usize {
        usize::try_from(self.batch_length)
            .map(|l| l + LOG_OVERHEAD_BYTES)
            .unwrap_or(0)
    }

    /// Gives the offset of the last record: base offset + lastOffsetDelta.
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(i64::from(self.last_offset_delta))
    }

    /// Gives the offset after the batch: last offset + 1.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }
}

/// One batch found in a Produce request's records, validated, located by byte
/// range (no copy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidatedBatch {
    /// Start of the batch within the input buffer (bytes).
    pub position: usize,
    /// Total batch size in bytes, including the 12-byte offset/length prefix.
    pub size: usize,
    /// The decoded header (as sent by the producer).
    pub header: BatchHeader,
}

/// Takes the `records` field of one partition of a Produce request (one or
/// more concatenated RecordBatch v2) and `max_message_bytes` (Kafka
/// `message.max.bytes`, default 1048588 bytes); gives the batches, each
/// validated, or the first error:
///
/// - fewer than 17 bytes left (partial header), batchLength < 49, or a batch
///   extending past the buffer (trailing partial bytes) → `CorruptMessage` (2);
/// - magic < 2 → `LegacyMagic` (87), magic > 2 → `UnknownMagic` (2);
/// - total batch size > `max_message_bytes` → `MessageTooLarge` (10);
/// - CRC32C over bytes 21..end != crc field → `CorruptMessage` (2);
/// - unknown compression codec (5-7) → `CorruptMessage` (2);
/// - as Kafka's `LogValidator.validateBatch` for client appends: records_count
///   < 1, lastOffsetDelta + 1 != records_count (any compression), a control
///   batch, or a producer id with baseSequence < 0 → `InvalidRecord` (87);
/// - an empty `records` → `CorruptMessage` (2).
///
/// Does not decode individual records and does not copy.
pub fn validate_batches(
    records: &[u8],
    max_message_bytes: usize,
) -> Result<Vec<ValidatedBatch>, BatchError> {
    if records.is_empty() {
        return Err(BatchError::CorruptMessage(Corruption::EmptyRecords));
    }
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < records.len() {
        let rest = &records[pos..];
        if rest.len() < MAGIC_OFFSET + 1 {
            return Err(BatchError::CorruptMessage(Corruption::TrailingBytes {
                position: pos,
                len: rest.len(),
            }));
        }
        let size = batch_size_at(rest, pos)?;
        if size > max_message_bytes {
            return Err(BatchError::MessageTooLarge {
                size,
                max: max_message_bytes,
            });
        }
        let Some(batch) = rest.get(..size) else {
            return Err(BatchError::CorruptMessage(Corruption::Truncated {
                position: pos,
                size,
                remaining: rest.len(),
            }));
        };
        let header = checked_header(batch, pos)?;
        if header.compression() > 4 {
            return Err(BatchError::CorruptMessage(Corruption::UnknownCompression {
                codec: header.compression(),
            }));
        }
        if header.records_count < 1 || header.last_offset_delta < 0 {
            return Err(BatchError::InvalidRecord(RecordRule::RecordCount {
                records_count: header.records_count,
                last_offset_delta: header.last_offset_delta,
            }));
        }
        if i64::from(header.last_offset_delta) + 1 != i64::from(header.records_count) {
            return Err(BatchError::InvalidRecord(RecordRule::OffsetDeltaMismatch {
                last_offset_delta: header.last_offset_delta,
                records_count: header.records_count,
            }));
        }
        if header.is_control() {
            return Err(BatchError::InvalidRecord(RecordRule::ControlBatch));
        }
        if header.producer_id >= 0 && header.base_sequence < 0 {
            return Err(BatchError::InvalidRecord(RecordRule::InvalidSequence {
                base_sequence: header.base_sequence,
                producer_id: header.producer_id,
            }));
        }
        out.push(ValidatedBatch {
            position: pos,
            size,
            header,
        });
        pos += size;
    }
    Ok(out)
}

/// Takes the bytes from a batch's start (at least its magic byte) and the
/// batch's position (for errors); gives the batch's total size from its
/// length field. Errors: magic below 2 → `LegacyMagic`, above →
/// `UnknownMagic`, batchLength below 49 → `CorruptMessage`.
fn batch_size_at(rest: &[u8], pos: usize) -> Result<usize, BatchError> {
    let magic = rest[MAGIC_OFFSET] as i8;
    if magic < CURRENT_MAGIC {
        return Err(BatchError::LegacyMagic(magic));
    }
    if magic > CURRENT_MAGIC {
        return Err(BatchError::UnknownMagic(magic));
    }
    let batch_length = be_i32(rest, 8);
    if batch_length < MIN_BATCH_LENGTH {
        return Err(BatchError::CorruptMessage(
            Corruption::BatchLengthTooSmall {
                position: pos,
                batch_length,
            },
        ));
    }
    // batch_length >= 49 so the conversion cannot fail on 32/64-bit targets.
    Ok(usize::try_from(batch_length)
        .map_err(|_| BatchError::CorruptMessage(Corruption::BatchLengthOverflow))?
        + LOG_OVERHEAD_BYTES)
}

/// Takes one whole batch and its position (for errors); gives its header
/// once its CRC32C (bytes 21..end) matches. Errors: a short or bad header,
/// a CRC mismatch → `CorruptMessage`.
fn checked_header(batch: &[u8], pos: usize) -> Result<BatchHeader, BatchError> {
    let header = BatchHeader::parse(batch)?;
    let computed = crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..]);
    if computed != header.crc {
        return Err(BatchError::CorruptMessage(Corruption::CrcMismatch {
            position: pos,
            stored: header.crc,
            computed,
        }));
    }
    Ok(header)
}

/// Takes the records of one partition of a follower's Fetch response (the
/// leader's stored batches) and gives the whole batches in it, checked as a
/// follower must before it appends them byte for byte (Kafka
/// `UnifiedLog.appendAsFollower`: magic 2, a sane length, the CRC32C). The
/// client rules of [`validate_batches`] do not apply: a control batch, a
/// compacted batch with fewer records than offsets, are the leader's own.
/// A partial batch at the end (the response's size limit cut it) is left
/// out. Errors: `LegacyMagic`/`UnknownMagic`, `CorruptMessage` (a length
/// below the minimum, a CRC mismatch).
pub fn replica_batches(records: &[u8]) -> Result<Vec<ValidatedBatch>, BatchError> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while records.len() - pos > MAGIC_OFFSET {
        let rest = &records[pos..];
        let size = batch_size_at(rest, pos)?;
        let Some(batch) = rest.get(..size) else {
            break;
        };
        let header = checked_header(batch, pos)?;
        out.push(ValidatedBatch {
            position: pos,
            size,
            header,
        });
        pos += size;
    }
    Ok(out)
}

/// Takes a whole batch (at least its 61-byte header; the CRC is computed over
/// the header's bytes 21..61 plus `batch[61..]`) and the broker time `now_ms`
/// (ms); gives the new 61-byte header for LogAppendTime (Kafka
/// `message.timestamp.type=LogAppendTime`): attributes bit 3 set,
/// maxTimestamp = `now_ms`, CRC32C recomputed. Bytes 0..21 (base offset,
/// length, leader epoch, magic) are copied unchanged except the CRC. A
/// shorter input gives a header zero-filled past the input.
pub fn log_append_time_header(batch: &[u8], now_ms: i64) -> [u8; RECORD_BATCH_HEADER_BYTES] {
    let mut h = [0u8; RECORD_BATCH_HEADER_BYTES];
    let n = batch.len().min(RECORD_BATCH_HEADER_BYTES);
    h[..n].copy_from_slice(&batch[..n]);
    let attrs = be_i16(&h, ATTRIBUTES_OFFSET) | ATTR_TIMESTAMP_TYPE;
    h[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attrs.to_be_bytes());
    h[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&now_ms.to_be_bytes());
    let mut crc = crc32c::crc32c(&h[ATTRIBUTES_OFFSET..]);
    if let Some(tail) = batch.get(RECORD_BATCH_HEADER_BYTES..) {
        crc = crc32c::crc32c_append(crc, tail);
    }
    h[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    h
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Builds real RecordBatch v2 bytes for tests.

    fn put_varint(out: &mut Vec<u8>, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        loop {
            if z < 0x80 {
                out.push(z as u8);
                return;
            }
            out.push((z as u8 & 0x7f) | 0x80);
            z >>= 7;
        }
    }

    /// Takes records and a codec; gives them encoded by the protocol crate as
    /// RecordBatch v2 bytes (one batch, or more where the encoder splits).
    pub fn encode_records(
        recs: &[kafka_protocol::records::Record],
        compression: kafka_protocol::records::Compression,
    ) -> Vec<u8> {
        let mut buf = bytes::BytesMut::new();
        kafka_protocol::records::RecordBatchEncoder::encode(
            &mut buf,
            recs.iter(),
            &kafka_protocol::records::RecordEncodeOptions {
                version: 2,
                compression,
            },
        )
        .unwrap();
        buf.to_vec()
    }

    /// Encodes a batch with `n` uncompressed records whose values are
    /// `value_len` bytes; record i has timestamp base_ts + i.
    pub fn build_batch(base_offset: i64, n: i32, base_ts: i64, value_len: usize) -> Vec<u8> {
        let mut recs = Vec::new();
        for i in 0..n {
            let mut body = Vec::new();
            body.push(0u8); // attributes
            put_varint(&mut body, i64::from(i)); // timestamp delta
            put_varint(&mut body, i64::from(i)); // offset delta
            put_varint(&mut body, -1); // null key
            put_varint(&mut body, value_len as i64);
            body.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, value_len));
            put_varint(&mut body, 0); // headers
            put_varint(&mut recs, body.len() as i64);
            recs.extend_from_slice(&body);
        }
        let mut b = Vec::new();
        b.extend_from_slice(&base_offset.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes()); // length placeholder
        b.extend_from_slice(&(-1i32).to_be_bytes()); // leader epoch
        b.push(2); // magic
        b.extend_from_slice(&0u32.to_be_bytes()); // crc placeholder
        b.extend_from_slice(&0i16.to_be_bytes()); // attributes
        b.extend_from_slice(&(n - 1).to_be_bytes());
        b.extend_from_slice(&base_ts.to_be_bytes());
        b.extend_from_slice(&(base_ts + i64::from(n) - 1).to_be_bytes());
        b.extend_from_slice(&(-1i64).to_be_bytes()); // producer id
        b.extend_from_slice(&(-1i16).to_be_bytes()); // producer epoch
        b.extend_from_slice(&(-1i32).to_be_bytes()); // base sequence
        b.extend_from_slice(&n.to_be_bytes());
        assert_eq!(b.len(), 61);
        b.extend_from_slice(&recs);
        let len = (b.len() - 12) as i32;
        b[8..12].copy_from_slice(&len.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    /// Recomputes the CRC after a test edited the covered bytes.
    pub fn fix_crc(b: &mut [u8]) {
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use crate::error::KafkaCode;

    #[test]
    fn validate_ok_multiple_batches() {
        let mut buf = build_batch(0, 3, 1000, 10);
        let b2 = build_batch(0, 5, 2000, 20);
        let first_len = buf.len();
        buf.extend_from_slice(&b2);
        let v = validate_batches(&buf, DEFAULT_MAX_MESSAGE_BYTES).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].position, 0);
        assert_eq!(v[0].size, first_len);
        assert_eq!(v[0].header.records_count, 3);
        assert_eq!(v[0].header.last_offset_delta, 2);
        assert_eq!(v[0].header.max_timestamp, 1002);
        assert_eq!(v[1].position, first_len);
        assert_eq!(v[1].size, b2.len());
        assert_eq!(v[1].header.records_count, 5);
        assert_eq!(v[1].header.magic, 2);
        assert_eq!(v[1].header.timestamp_type(), TimestampType::CreateTime);
        assert!(!v[1].header.is_control());
        assert!(!v[1].header.is_transactional());
        assert_eq!(v[1].header.compression(), 0);
    }

    #[test]
    fn bad_crc_is_corrupt() {
        let mut b = build_batch(0, 2, 1000, 10);
        let last = b.len() - 3;
        b[last] ^= 0xff;
        let e = validate_batches(&b, DEFAULT_MAX_MESSAGE_BYTES).unwrap_err();
        assert!(
            matches!(
                e,
                BatchError::CorruptMessage(Corruption::CrcMismatch { .. })
            ),
            "{e:?}"
        );
        assert_eq!(e.code(), 2);
    }

    #[test]
    fn base_offset_and_epoch_are_outside_crc() {
        let mut b = build_batch(0, 2, 1000, 10);
        b[0..8].copy_from_slice(&12345i64.to_be_bytes());
        b[12..16].copy_from_slice(&7i32.to_be_bytes());
        assert!(validate_batches(&b, DEFAULT_MAX_MESSAGE_BYTES).is_ok());
    }

    #[test]
    fn truncated_batch_is_corrupt() {
        let b = build_batch(0, 2, 1000, 10);
        for cut in [1, 10, 16, 17, 60, 61, b.len() - 1] {
            let e = validate_batches(&b[..cut], DEFAULT_MAX_MESSAGE_BYTES).unwrap_err();
            assert!(
                matches!(e, BatchError::CorruptMessage(_)),
                "cut {cut}: {e:?}"
            );
        }
        // A whole batch followed by a partial one.
        let mut two = b.clone();
        two.extend_from_slice(&b[..30]);
        let e = validate_batches(&two, DEFAULT_MAX_MESSAGE_BYTES).unwrap_err();
        assert!(matches!(e, BatchError::CorruptMessage(_)));
        assert!(matches!(
            validate_batches(&[], DEFAULT_MAX_MESSAGE_BYTES),
            Err(BatchError::CorruptMessage(_))
        ));
    }

    #[test]
    fn short_batch_length_is_corrupt() {
        let mut b = build_batch(0, 1, 1000, 1);
        b[8..12].copy_from_slice(&48i32.to_be_bytes());
        assert!(matches!(
            validate_batches(&b, DEFAULT_MAX_MESSAGE_BYTES),
            Err(BatchError::CorruptMessage(_))
        ));
    }

    #[test]
    fn too_large_is_message_too_large() {
        let b = build_batch(0, 4, 1000, 100);
        let e = validate_batches(&b, b.len() - 1).unwrap_err();
        assert_eq!(
            e,
            BatchError::MessageTooLarge {
                size: b.len(),
                max: b.len() - 1
            }
        );
        assert_eq!(e.code(), 10);
        assert!(validate_batches(&b, b.len()).is_ok());
    }

    #[test]
    fn magic_1_is_rejected() {
        let mut b = build_batch(0, 1, 1000, 1);
        b[16] = 1;
        let e = validate_batches(&b, DEFAULT_MAX_MESSAGE_BYTES).unwrap_err();
        assert_eq!(e, BatchError::LegacyMagic(1));
        assert_eq!(e.code(), 87);
        b[16] = 3;
        assert_eq!(
            validate_batches(&b, DEFAULT_MAX_MESSAGE_BYTES)
                .unwrap_err()
                .code(),
            2
        );
    }

    #[test]
    fn count_mismatch_is_invalid_record() {
        let mut b = build_batch(0, 3, 1000, 1);
        b[57..61].copy_from_slice(&2i32.to_be_bytes());
        fix_crc(&mut b);
        let e = validate_batches(&b, DEFAULT_MAX_MESSAGE_BYTES).unwrap_err();
        assert!(matches!(e, BatchError::InvalidRecord(_)));
        assert_eq!(e.code(), 87);
        b[57..61].copy_from_slice(&0i32.to_be_bytes());
        b[23..27].copy_from_slice(&(-1i32).to_be_bytes());
        fix_crc(&mut b);
        assert!(matches!(
            validate_batches(&b, DEFAULT_MAX_MESSAGE_BYTES),
            Err(BatchError::InvalidRecord(_))
        ));
    }

    #[test]
    fn control_batch_from_client_is_invalid() {
        let mut b = build_batch(0, 1, 1000, 1);
        b[21..23].copy_from_slice(&0x20i16.to_be_bytes());
        fix_crc(&mut b);
        assert!(matches!(
            validate_batches(&b, DEFAULT_MAX_MESSAGE_BYTES),
            Err(BatchError::InvalidRecord(_))
        ));
    }

    #[test]
    fn log_append_time_header_rewrites_and_crc_validates() {
        let b = build_batch(0, 3, 1000, 10);
        let h = log_append_time_header(&b, 99_999);
        let mut nb = b.clone();
        nb[..61].copy_from_slice(&h);
        let v = validate_batches(&nb, DEFAULT_MAX_MESSAGE_BYTES).unwrap();
        assert_eq!(v[0].header.max_timestamp, 99_999);
        assert_eq!(v[0].header.base_timestamp, 1000);
        assert_eq!(v[0].header.timestamp_type(), TimestampType::LogAppendTime);
        assert_ne!(v[0].header.crc, BatchHeader::parse(&b).unwrap().crc);
        // Only the CRC, attributes and max timestamp changed.
        assert_eq!(&h[..17], &b[..17]);
        assert_eq!(&h[23..35], &b[23..35]);
        assert_eq!(&h[43..61], &b[43..61]);
    }
}
