//! Broker-side compression of record batches (Kafka's topic
//! `compression.type`), and the per-record walk that Produce validation needs
//! when it must look inside a batch (record timestamps, decompressed record
//! sizes).
//!
//! A RecordBatch v2 is a 61-byte header followed by its records, compressed
//! as a whole by the codec in attributes bits 0–2. Recompressing keeps the
//! records' bytes exactly (offset and timestamp deltas, keys, values,
//! headers) and every header field except the codec bits, the batch length
//! and the CRC32C. Codecs are those Kafka's clients read: gzip (RFC 1952),
//! snappy in the xerial framing of Java's snappy-java (magic, big-endian
//! version 1 / compatible version 1, then big-endian length-prefixed blocks
//! of at most 32 KiB), lz4 frames with independent 64 KiB blocks and no
//! content checksum (Kafka's `KafkaLZ4BlockOutputStream`), zstd frames.

use std::io::{Read, Write};

pub use super::batch::RecompressError;
use super::batch::{
    BatchError, BatchHeader, Corruption, RecordRule, ATTRIBUTES_OFFSET, CRC_OFFSET,
};
use super::RECORD_BATCH_HEADER_BYTES;

/// A record batch codec (attributes bits 0–2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// No compression (0).
    None = 0,
    /// gzip (1).
    Gzip = 1,
    /// snappy, xerial framing (2).
    Snappy = 2,
    /// lz4 frame (3).
    Lz4 = 3,
    /// zstd frame (4).
    Zstd = 4,
}

impl Codec {
    /// The codec of attributes value `bits` (0–4), None for 5–7.
    pub fn from_bits(bits: u8) -> Option<Codec> {
        match bits {
            0 => Some(Codec::None),
            1 => Some(Codec::Gzip),
            2 => Some(Codec::Snappy),
            3 => Some(Codec::Lz4),
            4 => Some(Codec::Zstd),
            _ => None,
        }
    }
}

/// The codec a topic stores batches with, and its level
/// (`compression.gzip.level`, `.lz4.level`, `.zstd.level`; ignored for
/// snappy and none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetCodec {
    /// Codec.
    pub codec: Codec,
    /// Level (gzip -1 = zlib's default).
    pub level: i32,
}

impl TargetCodec {
    /// Takes a codec and its level; gives the target.
    pub const fn new(codec: Codec, level: i32) -> TargetCodec {
        TargetCodec { codec, level }
    }
}

impl From<RecompressError> for BatchError {
    fn from(e: RecompressError) -> BatchError {
        match e {
            RecompressError::Corrupt(_) | RecompressError::Compress(_) => {
                BatchError::CorruptMessage(Corruption::Recompress(e))
            }
            RecompressError::RecordTooLarge { .. }
            | RecompressError::TooLarge(_)
            | RecompressError::Framing(_) => BatchError::InvalidRecord(RecordRule::Recompress(e)),
        }
    }
}

const SNAPPY_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
const SNAPPY_BLOCK: usize = 32 * 1024;
/// Largest decompressed batch held in memory, whatever the per-record limit.
pub const MAX_DECOMPRESSED_BATCH: u64 = 1 << 30;

fn corrupt(e: impl std::fmt::Display) -> RecompressError {
    RecompressError::Corrupt(e.to_string())
}

fn read_limited(mut r: impl Read, limit: u64) -> Result<Vec<u8>, RecompressError> {
    let mut out = Vec::new();
    r.by_ref()
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(corrupt)?;
    if out.len() as u64 > limit {
        return Err(RecompressError::TooLarge(limit));
    }
    Ok(out)
}

/// Takes a codec, compressed records and a size limit; gives the
/// decompressed bytes (at most `limit`). Snappy reads the xerial framing and
/// falls back to one raw block, as Java's snappy-java does.
pub fn decompress(codec: Codec, data: &[u8], limit: u64) -> Result<Vec<u8>, RecompressError> {
    match codec {
        Codec::None => Ok(data.to_vec()),
        Codec::Gzip => read_limited(flate2::read::GzDecoder::new(data), limit),
        Codec::Snappy => snappy_decompress(data, limit),
        Codec::Lz4 => read_limited(lz4::Decoder::new(data).map_err(corrupt)?, limit),
        Codec::Zstd => read_limited(
            zstd::stream::read::Decoder::new(data).map_err(corrupt)?,
            limit,
        ),
    }
}

fn snappy_block(block: &[u8], out: &mut Vec<u8>, limit: u64) -> Result<(), RecompressError> {
    let n = snap::raw::decompress_len(block).map_err(corrupt)?;
    if (out.len() + n) as u64 > limit {
        return Err(RecompressError::TooLarge(limit));
    }
    let start = out.len();
    out.resize(start + n, 0);
    snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(corrupt)?;
    Ok(())
}

fn snappy_decompress(data: &[u8], limit: u64) -> Result<Vec<u8>, RecompressError> {
    let mut out = Vec::new();
    let Some(mut rest) = data
        .strip_prefix(SNAPPY_MAGIC.as_slice())
        .and_then(|r| r.get(8..))
    else {
        snappy_block(data, &mut out, limit)?;
        return Ok(out);
    };
    while !rest.is_empty() {
        let (len, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| corrupt("truncated snappy block length"))?;
        let len = u32::from_be_bytes(*len) as usize;
        let block = tail
            .get(..len)
            .ok_or_else(|| corrupt("truncated snappy block"))?;
        snappy_block(block, &mut out, limit)?;
        rest = &tail[len..];
    }
    Ok(out)
}

/// Takes a target codec and uncompressed records; gives them compressed as
/// Kafka's clients read them (see the module documentation).
pub fn compress(target: TargetCodec, data: &[u8]) -> Result<Vec<u8>, RecompressError> {
    let failed = |e: std::io::Error| RecompressError::Compress(e.to_string());
    match target.codec {
        Codec::None => Ok(data.to_vec()),
        Codec::Gzip => {
            let level = match target.level {
                l @ 1..=9 => flate2::Compression::new(l as u32),
                _ => flate2::Compression::default(),
            };
            let mut e = flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 2), level);
            e.write_all(data).map_err(failed)?;
            e.finish().map_err(failed)
        }
        Codec::Snappy => {
            let mut out = Vec::with_capacity(data.len() / 2 + 16);
            out.extend_from_slice(SNAPPY_MAGIC);
            out.extend_from_slice(&1u32.to_be_bytes()); // version
            out.extend_from_slice(&1u32.to_be_bytes()); // compatible version
            let mut enc = snap::raw::Encoder::new();
            for block in data.chunks(SNAPPY_BLOCK) {
                let c = enc
                    .compress_vec(block)
                    .map_err(|e| RecompressError::Compress(e.to_string()))?;
                out.extend_from_slice(&(c.len() as u32).to_be_bytes());
                out.extend_from_slice(&c);
            }
            Ok(out)
        }
        Codec::Lz4 => {
            let mut e = lz4::EncoderBuilder::new()
                .level(target.level.clamp(1, 17) as u32)
                .block_size(lz4::BlockSize::Max64KB)
                .block_mode(lz4::BlockMode::Independent)
                .checksum(lz4::ContentChecksum::NoChecksum)
                .build(Vec::with_capacity(data.len() / 2))
                .map_err(failed)?;
            e.write_all(data).map_err(failed)?;
            let (out, r) = e.finish();
            r.map_err(failed)?;
            Ok(out)
        }
        Codec::Zstd => zstd::bulk::compress(data, target.level).map_err(failed),
    }
}

pub use super::records::{summarize_records, RecordsSummary, NO_TIMESTAMP};

/// A batch rebuilt with another codec, and what its records hold.
#[derive(Debug)]
pub struct Recompressed {
    /// The whole new batch (offset prefix, header, records).
    pub bytes: Vec<u8>,
    /// The records' summary.
    pub summary: RecordsSummary,
}

/// Takes one whole validated batch and `max.decompressed.message.bytes`
/// (bytes, per record); checks every record as Kafka's `LogValidator` does
/// (a compressed batch after decompressing it, at most that limit times its
/// record count) and gives its decompressed records (None: uncompressed, its
/// own bytes) and their summary. A record larger than the limit
/// → `RecordTooLarge` (INVALID_RECORD); a malformed record → `Framing`
/// (INVALID_RECORD); records that do not decompress → `Corrupt`
/// (CORRUPT_MESSAGE).
pub fn walk_batch(
    batch: &[u8],
    header: &BatchHeader,
    max_record_bytes: usize,
) -> Result<(Option<Vec<u8>>, RecordsSummary), RecompressError> {
    let limit = (max_record_bytes as u64)
        .saturating_mul(header.records_count.max(1) as u64)
        .min(MAX_DECOMPRESSED_BATCH);
    let (plain, summary) = super::records::inspect_batch(batch, header, limit)?;
    if summary.max_record_bytes > max_record_bytes {
        return Err(RecompressError::RecordTooLarge {
            size: summary.max_record_bytes,
            max: max_record_bytes,
        });
    }
    Ok((plain, summary))
}

/// Takes one whole validated batch, the topic's codec and
/// `max.decompressed.message.bytes`; gives the batch rebuilt with that codec
/// when it has another one (None: the codec already matches and the bytes
/// are kept as they are, whatever their level, as Kafka does), with its
/// records' summary. The records' bytes, every header field but the codec
/// bits, the length and the CRC are unchanged.
pub fn recompress(
    batch: &[u8],
    header: &BatchHeader,
    target: TargetCodec,
    max_record_bytes: usize,
) -> Result<Option<Recompressed>, RecompressError> {
    let from = Codec::from_bits(header.compression())
        .ok_or_else(|| corrupt(format!("unknown codec {}", header.compression())))?;
    if from == target.codec {
        return Ok(None);
    }
    let (plain, summary) = walk_batch(batch, header, max_record_bytes)?;
    let records = plain
        .as_deref()
        .unwrap_or_else(|| batch.get(RECORD_BATCH_HEADER_BYTES..).unwrap_or_default());
    let packed = compress(target, records)?;
    let mut out = Vec::with_capacity(RECORD_BATCH_HEADER_BYTES + packed.len());
    out.extend_from_slice(&batch[..RECORD_BATCH_HEADER_BYTES]);
    out.extend_from_slice(&packed);
    let batch_length =
        i32::try_from(out.len() - 12).map_err(|_| RecompressError::TooLarge(i32::MAX as u64))?;
    out[8..12].copy_from_slice(&batch_length.to_be_bytes());
    let attrs = (header.attributes & !0x07) | target.codec as i16;
    out[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attrs.to_be_bytes());
    let crc = crc32c::crc32c(&out[ATTRIBUTES_OFFSET..]);
    out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(Some(Recompressed {
        bytes: out,
        summary,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use kafka_protocol::records::{Compression, RecordBatchDecoder};

    fn batch(compression: Compression, n: i64) -> Vec<u8> {
        let recs: Vec<_> = (0..n)
            .map(|i| {
                let mut r = crate::protocol::plain_record(
                    i,
                    1_000 + i,
                    Some(Bytes::from(format!("k{i}"))),
                    Some(Bytes::from("value ".repeat(50))),
                );
                r.producer_id = 7;
                r.producer_epoch = 2;
                r.sequence = 10 + i as i32;
                r
            })
            .collect();
        crate::storage::batch::testutil::encode_records(&recs, compression)
    }

    /// (offset, timestamp, key, value, producer id, sequence) of a record.
    type Row = (i64, i64, Option<Bytes>, Option<Bytes>, i64, i32);

    fn values(b: &[u8]) -> Vec<Row> {
        let mut buf = Bytes::copy_from_slice(b);
        let set = RecordBatchDecoder::decode(&mut buf).unwrap();
        set.records
            .into_iter()
            .map(|r| {
                (
                    r.offset,
                    r.timestamp,
                    r.key,
                    r.value,
                    r.producer_id,
                    r.sequence,
                )
            })
            .collect()
    }

    #[test]
    fn every_codec_to_every_codec_keeps_the_records() {
        let codecs = [
            (Compression::None, Codec::None),
            (Compression::Gzip, Codec::Gzip),
            (Compression::Snappy, Codec::Snappy),
            (Compression::Lz4, Codec::Lz4),
            (Compression::Zstd, Codec::Zstd),
        ];
        for (from, from_codec) in codecs {
            let original = batch(from, 40);
            let expected = values(&original);
            for (_, to) in codecs {
                let h = BatchHeader::parse(&original).unwrap();
                let level = if to == Codec::Gzip { 9 } else { 3 };
                let r = recompress(&original, &h, TargetCodec::new(to, level), 1 << 20).unwrap();
                let Some(r) = r else {
                    assert_eq!(from_codec, to, "only the same codec keeps the bytes");
                    continue;
                };
                let nh = BatchHeader::parse(&r.bytes).unwrap();
                assert_eq!(nh.compression(), to as u8);
                assert_eq!(nh.crc, crc32c::crc32c(&r.bytes[ATTRIBUTES_OFFSET..]));
                assert_eq!(nh.total_size(), r.bytes.len());
                assert_eq!((nh.producer_id, nh.base_sequence), (7, 10));
                assert_eq!(values(&r.bytes), expected, "{from_codec:?} -> {to:?}");
                assert_eq!(
                    (r.summary.min_timestamp, r.summary.max_timestamp),
                    (1_000, 1_039)
                );
            }
        }
    }

    #[test]
    fn snappy_uses_the_xerial_framing() {
        let original = batch(Compression::None, 3);
        let h = BatchHeader::parse(&original).unwrap();
        let r = recompress(&original, &h, TargetCodec::new(Codec::Snappy, 0), 1 << 20)
            .unwrap()
            .unwrap();
        let body = &r.bytes[RECORD_BATCH_HEADER_BYTES..];
        assert_eq!(&body[..8], SNAPPY_MAGIC);
        assert_eq!(&body[8..16], &[0, 0, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn records_larger_than_the_limit_are_refused() {
        let original = batch(Compression::Gzip, 2);
        let h = BatchHeader::parse(&original).unwrap();
        let e = recompress(&original, &h, TargetCodec::new(Codec::None, 0), 100).unwrap_err();
        assert!(matches!(BatchError::from(e), BatchError::InvalidRecord(_)));
    }

    #[test]
    fn garbage_does_not_decompress() {
        for c in [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
            assert!(
                decompress(
                    c,
                    b"\x82SNAPPY\x00\0\0\0\x01\0\0\0\x01\xff\xff\xff\xff",
                    1 << 20
                )
                .is_err(),
                "{c:?}"
            );
        }
    }

    #[test]
    fn walk_finds_timestamps_and_rejects_bad_counts() {
        let original = batch(Compression::None, 5);
        let h = BatchHeader::parse(&original).unwrap();
        let body = &original[RECORD_BATCH_HEADER_BYTES..];
        let s = summarize_records(body, 5, h.base_timestamp).unwrap();
        assert_eq!((s.min_timestamp, s.max_timestamp), (1_000, 1_004));
        assert!(summarize_records(body, 4, h.base_timestamp).is_err());
        assert!(summarize_records(body, 6, h.base_timestamp).is_err());
    }
}
