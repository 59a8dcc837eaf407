//! Pre-built record batches and produce frames.
//!
//! A batch is encoded once with `RecordBatchEncoder`; a produce request
//! around it is encoded once per (partition, batch). Sending it again only
//! rewrites the correlation id, which lies outside the batch CRC. For the
//! end-to-end workload the first record's value carries the intended send
//! time, so that batch is patched and its CRC recomputed per send.

use bytes::{Bytes, BytesMut};
use indexmap_free::empty_headers;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use crate::wire::{encode_frame, topic_name, Res, CORRELATION_POS};

/// Offsets of the RecordBatch v2 header fields.
pub const BATCH_HEADER_LEN: usize = 61;
pub const CRC_POS: usize = 17;
pub const ATTRIBUTES_POS: usize = 21;
pub const LAST_OFFSET_DELTA_POS: usize = 23;
pub const BASE_TIMESTAMP_POS: usize = 27;
pub const MAX_TIMESTAMP_POS: usize = 35;
pub const PRODUCER_ID_POS: usize = 43;
pub const PRODUCER_EPOCH_POS: usize = 51;
pub const BASE_SEQUENCE_POS: usize = 53;
pub const RECORD_COUNT_POS: usize = 57;
/// Attributes bit 4: the batch belongs to a transaction.
pub const TRANSACTIONAL_FLAG: i16 = 0x10;

mod indexmap_free {
    /// Records carry no headers; `Default` builds the empty map without
    /// naming the map type.
    pub fn empty_headers<T: Default>() -> T {
        T::default()
    }
}

pub fn parse_compression(s: &str) -> Res<Compression> {
    Ok(match s {
        "none" => Compression::None,
        "gzip" => Compression::Gzip,
        "snappy" => Compression::Snappy,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        _ => return Err(format!("unknown compression {s}").into()),
    })
}

/// Deterministic filler: xorshift bytes (incompressible) or, with
/// `compressible`, a short repeating text with a counter.
fn fill(buf: &mut [u8], seed: u64, compressible: bool) {
    if compressible {
        let text = b"fjord-perf record payload, moderately compressible; ";
        for (i, b) in buf.iter_mut().enumerate() {
            *b = text[i % text.len()] ^ ((i / 997) as u8 & 0x3);
        }
        return;
    }
    let mut x = seed | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// Encodes one batch of `count` records whose values are `value_size` bytes.
pub fn build_batch(
    count: usize,
    value_size: usize,
    compression: Compression,
    compressible: bool,
    timestamp_ms: i64,
    seed: u64,
) -> Res<Bytes> {
    let records: Vec<Record> = (0..count)
        .map(|i| {
            let mut value = vec![0u8; value_size];
            fill(&mut value, seed.wrapping_add(i as u64 * 7919), compressible);
            Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                // The encoder keeps records in one batch while offset - sequence
                // is constant; the batch base sequence stays -1 (no producer id).
                sequence: i as i32 - 1,
                timestamp: timestamp_ms,
                key: None,
                value: Some(Bytes::from(value)),
                headers: empty_headers(),
            }
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )?;
    Ok(buf.freeze())
}

/// Reads a zig-zag varint (as used inside records); returns (value, bytes).
pub fn read_varint(buf: &[u8]) -> Option<(i64, usize)> {
    let mut raw: u64 = 0;
    for (i, &b) in buf.iter().enumerate().take(10) {
        raw |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Some((((raw >> 1) as i64) ^ -((raw & 1) as i64), i + 1));
        }
    }
    None
}

/// Position and length of the first record's value inside an
/// uncompressed batch (None if compressed, empty, or malformed).
pub fn first_value(batch: &[u8]) -> Option<(usize, usize)> {
    if batch.len() < BATCH_HEADER_LEN + 1 {
        return None;
    }
    let attributes = i16::from_be_bytes([batch[ATTRIBUTES_POS], batch[ATTRIBUTES_POS + 1]]);
    if attributes & 0x7 != 0 {
        return None;
    }
    let mut p = BATCH_HEADER_LEN;
    let (_len, n) = read_varint(&batch[p..])?;
    p += n;
    p += 1; // record attributes
    let (_ts_delta, n) = read_varint(batch.get(p..)?)?;
    p += n;
    let (_off_delta, n) = read_varint(batch.get(p..)?)?;
    p += n;
    let (key_len, n) = read_varint(batch.get(p..)?)?;
    p += n;
    if key_len > 0 {
        p += key_len as usize;
    }
    let (value_len, n) = read_varint(batch.get(p..)?)?;
    p += n;
    if value_len < 0 || p + value_len as usize > batch.len() {
        return None;
    }
    Some((p, value_len as usize))
}

/// Writes `stamp_ns` into the first 8 bytes of the first record's value,
/// sets base/max timestamps to the same instant in ms, and recomputes the
/// CRC. `value_pos` comes from [`first_value`].
pub fn stamp_batch(batch: &mut [u8], value_pos: usize, stamp_ns: u64) {
    batch[value_pos..value_pos + 8].copy_from_slice(&stamp_ns.to_be_bytes());
    let ms = (stamp_ns / 1_000_000) as i64;
    batch[BASE_TIMESTAMP_POS..BASE_TIMESTAMP_POS + 8].copy_from_slice(&ms.to_be_bytes());
    batch[MAX_TIMESTAMP_POS..MAX_TIMESTAMP_POS + 8].copy_from_slice(&ms.to_be_bytes());
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_POS..]);
    batch[CRC_POS..CRC_POS + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Reads the stamp written by [`stamp_batch`], if the batch carries one.
pub fn read_stamp(batch: &[u8]) -> Option<u64> {
    let (p, len) = first_value(batch)?;
    if len < 8 {
        return None;
    }
    Some(u64::from_be_bytes(batch[p..p + 8].try_into().ok()?))
}

/// A produce request frame ready to write, with the position of its batch.
#[derive(Clone)]
pub struct ProduceFrame {
    pub frame: Vec<u8>,
    pub batch_pos: usize,
    pub batch_len: usize,
    pub records: usize,
    /// Position of the first record's value inside the frame (uncompressed).
    pub value_pos: Option<usize>,
}

impl ProduceFrame {
    pub fn new(
        topic: &str,
        partition: i32,
        acks: i16,
        batch: &Bytes,
        records: usize,
        version: i16,
    ) -> Res<ProduceFrame> {
        ProduceFrame::with_txn(topic, partition, acks, batch, records, version, None)
    }

    /// As [`ProduceFrame::new`], with the request's `transactional_id` set
    /// (Produce v3+; required when the batch is transactional).
    pub fn with_txn(
        topic: &str,
        partition: i32,
        acks: i16,
        batch: &Bytes,
        records: usize,
        version: i16,
        transactional_id: Option<&str>,
    ) -> Res<ProduceFrame> {
        let mut pd = PartitionProduceData::default();
        pd.index = partition;
        pd.records = Some(batch.clone());
        let mut td = TopicProduceData::default();
        td.name = topic_name(topic);
        td.partition_data.push(pd);
        let mut req = ProduceRequest::default();
        req.transactional_id =
            transactional_id.map(|t| TransactionalId(StrBytes::from_string(t.to_string())));
        req.acks = acks;
        req.timeout_ms = 30_000;
        req.topic_data.push(td);
        let frame = encode_frame(&req, version, 0)?.to_vec();
        // The batch is the last variable part of the frame; only tagged
        // field counts (flexible versions) may follow it.
        let batch_pos = find(&frame, &batch[..BATCH_HEADER_LEN.min(batch.len())])
            .ok_or("batch not found in encoded frame")?;
        let value_pos = first_value(batch).map(|(p, _)| batch_pos + p);
        Ok(ProduceFrame {
            frame,
            batch_pos,
            batch_len: batch.len(),
            records,
            value_pos,
        })
    }

    pub fn set_correlation(&mut self, c: i32) {
        self.frame[CORRELATION_POS..CORRELATION_POS + 4].copy_from_slice(&c.to_be_bytes());
    }

    /// The batch inside the frame.
    pub fn batch_mut(&mut self) -> &mut [u8] {
        &mut self.frame[self.batch_pos..self.batch_pos + self.batch_len]
    }

    /// Stamps the intended send time into the batch (end-to-end workload).
    pub fn stamp(&mut self, stamp_ns: u64) -> bool {
        match self.value_pos {
            Some(vp) => {
                let (s, e) = (self.batch_pos, self.batch_pos + self.batch_len);
                stamp_batch(&mut self.frame[s..e], vp - s, stamp_ns);
                true
            }
            None => false,
        }
    }
}

/// Marks an uncompressed or compressed v2 batch as transactional and sets
/// its producer id and epoch. The CRC is left stale: [`set_base_sequence`]
/// recomputes it before every send.
pub fn make_transactional(batch: &mut [u8], producer_id: i64, epoch: i16) {
    let attrs = i16::from_be_bytes([batch[ATTRIBUTES_POS], batch[ATTRIBUTES_POS + 1]]);
    batch[ATTRIBUTES_POS..ATTRIBUTES_POS + 2]
        .copy_from_slice(&(attrs | TRANSACTIONAL_FLAG).to_be_bytes());
    batch[PRODUCER_ID_POS..PRODUCER_ID_POS + 8].copy_from_slice(&producer_id.to_be_bytes());
    batch[PRODUCER_EPOCH_POS..PRODUCER_EPOCH_POS + 2].copy_from_slice(&epoch.to_be_bytes());
}

/// Sets the batch's base sequence and recomputes its CRC.
pub fn set_base_sequence(batch: &mut [u8], seq: i32) {
    batch[BASE_SEQUENCE_POS..BASE_SEQUENCE_POS + 4].copy_from_slice(&seq.to_be_bytes());
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_POS..]);
    batch[CRC_POS..CRC_POS + 4].copy_from_slice(&crc.to_be_bytes());
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// Summary of the batches in a fetched `records` blob.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Walk {
    pub batches: u64,
    pub records: u64,
    pub bytes: u64,
    /// Offset after the last complete batch, if any.
    pub next_offset: Option<i64>,
}

/// Walks complete batches, calling `each` with every batch's bytes.
pub fn walk_batches(buf: &[u8], mut each: impl FnMut(&[u8])) -> Walk {
    let mut w = Walk::default();
    let mut p = 0usize;
    while p + BATCH_HEADER_LEN <= buf.len() {
        let base = i64::from_be_bytes(buf[p..p + 8].try_into().unwrap());
        let len = i32::from_be_bytes(buf[p + 8..p + 12].try_into().unwrap());
        if len < (BATCH_HEADER_LEN as i32 - 12) {
            break;
        }
        let total = 12 + len as usize;
        if p + total > buf.len() {
            break; // partial batch at the end of a fetch
        }
        let b = &buf[p..p + total];
        let lod = i32::from_be_bytes(
            b[LAST_OFFSET_DELTA_POS..LAST_OFFSET_DELTA_POS + 4]
                .try_into()
                .unwrap(),
        );
        let count = i32::from_be_bytes(
            b[RECORD_COUNT_POS..RECORD_COUNT_POS + 4]
                .try_into()
                .unwrap(),
        );
        each(b);
        w.batches += 1;
        w.records += count.max(0) as u64;
        w.bytes += total as u64;
        w.next_offset = Some(base + lod as i64 + 1);
        p += total;
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::protocol::Decodable;
    use kafka_protocol::records::RecordBatchDecoder;

    #[test]
    fn built_batch_decodes_with_expected_records() {
        let b = build_batch(64, 1024, Compression::None, false, 1_700_000_000_000, 42).unwrap();
        let mut buf = b.clone();
        let set = RecordBatchDecoder::decode(&mut buf).unwrap();
        assert_eq!(set.records.len(), 64);
        for r in &set.records {
            assert_eq!(r.value.as_ref().unwrap().len(), 1024);
            assert!(r.key.is_none());
        }
        // 61-byte header + per-record framing (a few bytes) + values.
        assert!(b.len() > 64 * 1024 + 61 && b.len() < 64 * 1024 + 61 + 64 * 16);
    }

    #[test]
    fn compressed_batch_decodes() {
        let b = build_batch(16, 1024, Compression::Lz4, true, 0, 1).unwrap();
        assert!(b.len() < 16 * 1024, "compressible payload shrinks");
        let mut buf = b.clone();
        let set = RecordBatchDecoder::decode(&mut buf).unwrap();
        assert_eq!(set.records.len(), 16);
        assert!(first_value(&b).is_none());
    }

    #[test]
    fn stamp_round_trips_and_keeps_crc_valid() {
        let mut b = build_batch(8, 100, Compression::None, false, 0, 3)
            .unwrap()
            .to_vec();
        let (vp, len) = first_value(&b).unwrap();
        assert_eq!(len, 100);
        let stamp = 1_700_000_123_456_789_012u64;
        stamp_batch(&mut b, vp, stamp);
        assert_eq!(read_stamp(&b), Some(stamp));
        // The decoder verifies the CRC; it must accept the patched batch.
        let mut buf = Bytes::from(b);
        let set = RecordBatchDecoder::decode(&mut buf).unwrap();
        assert_eq!(set.records.len(), 8);
        assert_eq!(set.records[0].timestamp, (stamp / 1_000_000) as i64);
        let v = set.records[0].value.as_ref().unwrap();
        assert_eq!(&v[..8], &stamp.to_be_bytes());
    }

    #[test]
    fn produce_frame_locates_batch_and_patches_correlation() {
        let b = build_batch(4, 50, Compression::None, false, 0, 9).unwrap();
        let mut f = ProduceFrame::new("t", 3, 1, &b, 4, 9).unwrap();
        assert_eq!(&f.frame[f.batch_pos..f.batch_pos + b.len()], &b[..]);
        f.set_correlation(0x01020304);
        assert_eq!(&f.frame[8..12], &[1, 2, 3, 4]);
        let len = i32::from_be_bytes(f.frame[0..4].try_into().unwrap()) as usize;
        assert_eq!(len + 4, f.frame.len());
        assert!(f.stamp(77));
        assert_eq!(
            read_stamp(&f.frame[f.batch_pos..f.batch_pos + b.len()]),
            Some(77)
        );
    }

    #[test]
    fn transactional_patch_decodes_with_producer_and_sequences() {
        let b = build_batch(4, 50, Compression::None, false, 0, 9).unwrap();
        let mut f = ProduceFrame::with_txn("t", 0, -1, &b, 4, 9, Some("tx-1")).unwrap();
        assert_eq!(&f.frame[f.batch_pos..f.batch_pos + b.len()], &b[..]);
        make_transactional(f.batch_mut(), 4242, 7);
        set_base_sequence(f.batch_mut(), 100);
        let mut buf = Bytes::copy_from_slice(f.batch_mut());
        let set = RecordBatchDecoder::decode(&mut buf).unwrap();
        assert_eq!(set.records.len(), 4);
        for (i, r) in set.records.iter().enumerate() {
            assert!(r.transactional && !r.control);
            assert_eq!(r.producer_id, 4242);
            assert_eq!(r.producer_epoch, 7);
            assert_eq!(r.sequence, 100 + i as i32);
        }
        // The request carries the transactional id.
        let mut body = Bytes::copy_from_slice(&f.frame[4..]);
        let _hdr = kafka_protocol::messages::RequestHeader::decode(&mut body, 2).unwrap();
        let req = ProduceRequest::decode(&mut body, 9).unwrap();
        assert_eq!(
            req.transactional_id.as_ref().map(|t| t.0.as_str()),
            Some("tx-1")
        );
        assert_eq!(req.acks, -1);
    }

    #[test]
    fn walk_counts_batches_and_ignores_partial_tail() {
        let a = build_batch(10, 20, Compression::None, false, 0, 1).unwrap();
        let mut joined = a.to_vec();
        // Second batch at base offset 10.
        let mut second = a.to_vec();
        second[0..8].copy_from_slice(&10i64.to_be_bytes());
        joined.extend_from_slice(&second);
        joined.extend_from_slice(&a[..30]); // truncated third
        let mut seen = 0;
        let w = walk_batches(&joined, |_| seen += 1);
        assert_eq!(seen, 2);
        assert_eq!(w.batches, 2);
        assert_eq!(w.records, 20);
        assert_eq!(w.bytes, 2 * a.len() as u64);
        assert_eq!(w.next_offset, Some(20));
    }

    #[test]
    fn varint_decoding() {
        assert_eq!(read_varint(&[0x00]), Some((0, 1)));
        assert_eq!(read_varint(&[0x01]), Some((-1, 1)));
        assert_eq!(read_varint(&[0x02]), Some((1, 1)));
        assert_eq!(read_varint(&[0x80, 0x10]), Some((1024, 2)));
        assert_eq!(read_varint(&[0x80]), None);
    }
}
