//! The records inside a RecordBatch v2: the walk that checks every record's
//! framing as Kafka's `DefaultRecord.readFrom` does, and the one door to the
//! protocol crate's record decoder.
//!
//! A record is `length` (varint), attributes (int8), timestamp delta
//! (varlong), offset delta (varint), key length (varint, -1: null) and key,
//! value length (varint, -1: null) and value, header count (varint), then
//! per header a key length (varint, at least 0) and key and a value length
//! (varint, -1: null) and value; the fields fill exactly `length` bytes.
//!
//! The crate sizes memory from counts it reads (a record's header count
//! becomes a hash map's capacity, a batch's record count a vector's), so no
//! bytes reach it that this walk has not accepted: every count it reads is
//! then bounded by the bytes that hold it. Produce walks every batch
//! (compressed ones after decompression, as Kafka's `LogValidator` does),
//! and every reader of stored batches decodes through [`decode_batch`] or
//! [`decode_batches`], so a damaged or hostile segment is an error, never
//! an allocation sized by an attacker.

use bytes::{Buf, Bytes};
use kafka_protocol::records::{Compression, RecordBatchDecoder, RecordSet};

use super::batch::CURRENT_MAGIC;
use super::batch::{BatchHeader, RecompressError};
use super::recompress::{decompress, Codec, MAX_DECOMPRESSED_BATCH};
use super::RECORD_BATCH_HEADER_BYTES;

/// A record without a timestamp (Kafka's `RecordBatch.NO_TIMESTAMP`).
pub const NO_TIMESTAMP: i64 = -1;

/// What the record walk found in uncompressed records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordsSummary {
    /// Smallest record timestamp (base timestamp + delta), records without
    /// a timestamp (-1) left out; `i64::MAX` when there is none.
    pub min_timestamp: i64,
    /// Largest record timestamp, likewise; `i64::MIN` when there is none.
    pub max_timestamp: i64,
    /// Largest record (bytes, its length field).
    pub max_record_bytes: usize,
}

fn corrupt(e: impl std::fmt::Display) -> RecompressError {
    RecompressError::Corrupt(e.to_string())
}

fn framing(e: impl std::fmt::Display) -> RecompressError {
    RecompressError::Framing(e.to_string())
}

/// Reads one zigzag varint/varlong at `*pos` of `buf` and moves past it;
/// None when it runs past `buf` or is longer than 10 bytes.
pub(super) fn varint(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(((v >> 1) as i64) ^ -((v & 1) as i64));
        }
    }
    None
}

/// Moves `*pos` past a length-prefixed field of `record`: the length
/// (varint) must be at least `min` (-1: a null field may be sent, 0: it may
/// not) and the field must end inside `record`.
fn skip_field(record: &[u8], pos: &mut usize, min: i64, what: &str) -> Result<(), RecompressError> {
    let len = varint(record, pos).ok_or_else(|| framing(format!("truncated {what} length")))?;
    if len < min {
        return Err(framing(format!("invalid {what} length {len}")));
    }
    if len > 0 {
        *pos = usize::try_from(len)
            .ok()
            .and_then(|n| pos.checked_add(n))
            .filter(|e| *e <= record.len())
            .ok_or_else(|| framing(format!("{what} extends past the record")))?;
    }
    Ok(())
}

/// Takes one record's bytes after its length field; checks every field
/// fits and the fields fill exactly those bytes; gives its timestamp delta.
fn walk_record(record: &[u8]) -> Result<i64, RecompressError> {
    let mut p = 1; // attributes
    if record.is_empty() {
        return Err(framing("empty record"));
    }
    let delta = varint(record, &mut p).ok_or_else(|| framing("bad timestamp delta"))?;
    varint(record, &mut p).ok_or_else(|| framing("bad offset delta"))?;
    skip_field(record, &mut p, -1, "key")?;
    skip_field(record, &mut p, -1, "value")?;
    let headers = varint(record, &mut p).ok_or_else(|| framing("bad header count"))?;
    if headers < 0 {
        return Err(framing(format!("invalid header count {headers}")));
    }
    // Each header takes at least two bytes, so a count the record cannot
    // hold is refused before any header is read.
    if headers > ((record.len() - p) / 2) as i64 {
        return Err(framing(format!(
            "header count {headers} in a record of {} bytes",
            record.len()
        )));
    }
    for _ in 0..headers {
        skip_field(record, &mut p, 0, "header key")?;
        skip_field(record, &mut p, -1, "header value")?;
    }
    if p != record.len() {
        return Err(framing(format!(
            "record of {} bytes holds {} bytes of fields",
            record.len(),
            p
        )));
    }
    Ok(delta)
}

/// Takes uncompressed records, their count and the batch's base timestamp;
/// checks every record's framing (see the module documentation) and gives
/// their timestamp bounds and largest size. `Framing` (INVALID_RECORD, as
/// Kafka 4.4 answers) when a record is malformed or the records do not add
/// up to exactly `count` records.
pub fn summarize_records(
    records: &[u8],
    count: i32,
    base_timestamp: i64,
) -> Result<RecordsSummary, RecompressError> {
    let mut s = RecordsSummary {
        min_timestamp: i64::MAX,
        max_timestamp: i64::MIN,
        max_record_bytes: 0,
    };
    let mut pos = 0usize;
    for _ in 0..count {
        let len = varint(records, &mut pos).ok_or_else(|| framing("truncated record length"))?;
        let len = usize::try_from(len).map_err(|_| framing("negative record length"))?;
        let end = pos
            .checked_add(len)
            .filter(|e| *e <= records.len())
            .ok_or_else(|| framing("record extends past the batch"))?;
        let delta = walk_record(&records[pos..end])?;
        let ts = base_timestamp.saturating_add(delta);
        if ts != NO_TIMESTAMP {
            s.min_timestamp = s.min_timestamp.min(ts);
            s.max_timestamp = s.max_timestamp.max(ts);
        }
        s.max_record_bytes = s.max_record_bytes.max(len);
        pos = end;
    }
    if pos != records.len() {
        return Err(framing(format!(
            "{} bytes after the batch's {count} records",
            records.len() - pos
        )));
    }
    Ok(s)
}

/// Takes one whole batch (header and records, as stored), its parsed
/// header and the most bytes its records may decompress to; checks every
/// record (see the module documentation) and gives their summary, with the
/// decompressed records of a compressed batch (None: the batch is
/// uncompressed and its records are its own bytes after the header).
pub fn inspect_batch(
    batch: &[u8],
    header: &BatchHeader,
    limit: u64,
) -> Result<(Option<Vec<u8>>, RecordsSummary), RecompressError> {
    let codec = Codec::from_bits(header.compression())
        .ok_or_else(|| corrupt(format!("unknown codec {}", header.compression())))?;
    let body = batch
        .get(RECORD_BATCH_HEADER_BYTES..)
        .ok_or_else(|| corrupt("batch shorter than its header"))?;
    let plain = match codec {
        Codec::None => None,
        c => Some(decompress(c, body, limit)?),
    };
    let records = plain.as_deref().unwrap_or(body);
    let summary = summarize_records(records, header.records_count, header.base_timestamp)?;
    Ok((plain, summary))
}

/// One record header as stored: the key (UTF-8, as Kafka's `Header.key`)
/// and the value bytes (None: null).
pub type StoredHeader = (String, Option<Vec<u8>>);

/// Reads a length-prefixed field of `record` at `*pos` (already accepted by
/// [`walk_record`]); gives its bytes (None: null) and moves past it.
fn read_field(record: &[u8], pos: &mut usize) -> Option<Option<Vec<u8>>> {
    let len = varint(record, pos)?;
    if len < 0 {
        return Some(None);
    }
    let end = pos.checked_add(usize::try_from(len).ok()?)?;
    let bytes = record.get(*pos..end)?.to_vec();
    *pos = end;
    Some(Some(bytes))
}

/// Takes one whole stored batch and its parsed header; gives every record's
/// headers in the order they were sent, a key as often as it was sent (the
/// protocol crate's record type keeps one value per key). The records are
/// walked first as [`inspect_batch`] does; an error is that walk's.
pub fn record_headers(
    batch: &[u8],
    header: &BatchHeader,
) -> Result<Vec<Vec<StoredHeader>>, RecompressError> {
    let (plain, _) = inspect_batch(batch, header, MAX_DECOMPRESSED_BATCH)?;
    let body = batch.get(RECORD_BATCH_HEADER_BYTES..).unwrap_or_default();
    let records = plain.as_deref().unwrap_or(body);
    let truncated = || framing("record headers past the record");
    let mut out = Vec::new();
    let mut pos = 0usize;
    for _ in 0..header.records_count {
        let len = varint(records, &mut pos).ok_or_else(truncated)?;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| pos.checked_add(l))
            .ok_or_else(truncated)?;
        let record = records.get(pos..end).ok_or_else(truncated)?;
        let mut p = 1; // attributes
        varint(record, &mut p).ok_or_else(truncated)?; // timestamp delta
        varint(record, &mut p).ok_or_else(truncated)?; // offset delta
        read_field(record, &mut p).ok_or_else(truncated)?; // key
        read_field(record, &mut p).ok_or_else(truncated)?; // value
        let count = varint(record, &mut p).ok_or_else(truncated)?;
        let mut headers = Vec::new();
        for _ in 0..count {
            let key = read_field(record, &mut p).ok_or_else(truncated)?;
            let value = read_field(record, &mut p).ok_or_else(truncated)?;
            let key = String::from_utf8_lossy(&key.unwrap_or_default()).into_owned();
            headers.push((key, value));
        }
        out.push(headers);
        pos = end;
    }
    Ok(out)
}

/// Takes bytes starting at a stored batch; gives its records decoded by the
/// protocol crate after the walk accepted them (a compressed batch is
/// decompressed once, at most [`MAX_DECOMPRESSED_BATCH`] bytes) and moves
/// `buf` past the batch. A batch that is not magic 2, is cut short, or
/// whose records the crate refuses → `Corrupt`; records the walk refuses →
/// `Framing`.
pub fn decode_batch(buf: &mut Bytes) -> Result<RecordSet, RecompressError> {
    let header = BatchHeader::parse(buf).map_err(|e| corrupt(format!("{e:?}")))?;
    if header.magic != CURRENT_MAGIC {
        return Err(corrupt(format!("batch magic {}", header.magic)));
    }
    let size = header.total_size();
    if size < RECORD_BATCH_HEADER_BYTES || size > buf.len() {
        return Err(corrupt(format!(
            "batch of {size} bytes in {} bytes",
            buf.len()
        )));
    }
    let (plain, _) = inspect_batch(&buf[..size], &header, MAX_DECOMPRESSED_BATCH)?;
    let plain = plain.map(Bytes::from);
    let mut whole = buf.slice(..size);
    // The crate hands over the batch's records to "decompress": the walked
    // bytes go back (uncompressed: its own bytes, compressed: the copy the
    // walk decompressed), so nothing is decompressed twice.
    let set = RecordBatchDecoder::decode_with_custom_compression(
        &mut whole,
        Some(|records: &mut Bytes, _: Compression| {
            Ok(plain.clone().unwrap_or_else(|| records.clone()))
        }),
    )
    .map_err(corrupt)?;
    buf.advance(size);
    Ok(set)
}

/// Takes bytes holding whole stored batches, one after another; gives every
/// batch decoded as [`decode_batch`] does, or the first batch's error.
pub fn decode_batches(buf: &mut Bytes) -> Result<Vec<RecordSet>, RecompressError> {
    let mut sets = Vec::new();
    while buf.has_remaining() {
        sets.push(decode_batch(buf)?);
    }
    Ok(sets)
}

/// Takes the bytes of one whole control batch; gives its marker (decoding
/// with the protocol crate, so a compressed batch works too), or None when
/// it cannot be decoded or holds no known marker.
pub fn control_marker(batch: &[u8]) -> Option<super::txn_index::ControlMarker> {
    let mut b = Bytes::copy_from_slice(batch);
    let set = decode_batch(&mut b).ok()?;
    let r = set.records.first()?;
    super::txn_index::parse_control_record(r.key.as_deref()?, r.value.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::batch::testutil::{encode_records, fix_crc};

    fn encoded(compression: Compression, headers: usize) -> Vec<u8> {
        let recs: Vec<_> = (0..3)
            .map(|i| {
                let mut r = crate::protocol::plain_record(
                    i,
                    1_000 + i,
                    Some(Bytes::from(format!("k{i}"))),
                    Some(Bytes::from("v")),
                );
                for h in 0..headers {
                    r.headers
                        .insert(format!("h{h}").into(), Some(Bytes::from("x")));
                }
                r
            })
            .collect();
        encode_records(&recs, compression)
    }

    #[test]
    fn every_codec_decodes_through_the_door() {
        for c in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let mut two = encoded(c, 2);
            two.extend(encoded(c, 0));
            let sets = decode_batches(&mut Bytes::from(two)).unwrap();
            assert_eq!(sets.len(), 2, "{c:?}");
            assert_eq!(sets[0].records.len(), 3);
            assert_eq!(sets[0].records[2].headers.len(), 2);
            assert_eq!(sets[0].records[1].key.as_deref(), Some(&b"k1"[..]));
            assert_eq!(sets[1].records[0].timestamp, 1_000);
        }
    }

    /// Sets the header count of the first record (one header, one byte
    /// key "h0", value "x") to `count`, keeping every length; the record's
    /// bytes no longer add up.
    fn with_header_count(count: i64) -> Vec<u8> {
        let mut b = encoded(Compression::None, 1);
        // The first record: length, attributes 0, ts delta 0, offset delta 0,
        // key len 2 "k0", value len 1 "v", header count 1 ...
        let at = RECORD_BATCH_HEADER_BYTES + 1 + 1 + 1 + 1 + 1 + 2 + 1 + 1;
        assert_eq!(b[at], 2, "header count 1 (zigzag 2)");
        let zig = ((count << 1) ^ (count >> 63)) as u64;
        let mut v = Vec::new();
        let mut z = zig;
        loop {
            let byte = (z & 0x7f) as u8;
            z >>= 7;
            if z == 0 {
                v.push(byte);
                break;
            }
            v.push(byte | 0x80);
        }
        b.splice(at..at + 1, v.iter().copied());
        let len = (b.len() - 12) as i32;
        b[8..12].copy_from_slice(&len.to_be_bytes());
        fix_crc(&mut b);
        b
    }

    #[test]
    fn a_header_count_the_record_cannot_hold_is_refused_before_the_crate() {
        for count in [i64::from(i32::MAX), 1 << 20, 5, -1] {
            let e = decode_batch(&mut Bytes::from(with_header_count(count))).unwrap_err();
            assert!(matches!(e, RecompressError::Framing(_)), "{count}: {e:?}");
        }
    }

    #[test]
    fn fields_that_leave_bytes_over_or_run_past_the_record_are_refused() {
        let b = encoded(Compression::None, 1);
        let h = BatchHeader::parse(&b).unwrap();
        let body = &b[RECORD_BATCH_HEADER_BYTES..];
        assert!(summarize_records(body, 3, h.base_timestamp).is_ok());
        // The first record one byte longer than its fields.
        let mut longer = body.to_vec();
        longer[0] += 2; // zigzag: length + 1
        longer.insert(usize::from(body[0] / 2) + 1, 0);
        assert!(summarize_records(&longer, 3, h.base_timestamp).is_err());
        // A key length past the record.
        let mut key = body.to_vec();
        key[4] = 0x7e; // key length 63
        assert!(summarize_records(&key, 3, h.base_timestamp).is_err());
        // A negative header key length.
        let mut hk = body.to_vec();
        hk[9] = 1; // header key length -1
        assert!(summarize_records(&hk, 3, h.base_timestamp).is_err());
    }

    #[test]
    fn a_negative_record_count_or_another_magic_is_refused() {
        let mut b = encoded(Compression::None, 0);
        b[57..61].copy_from_slice(&(-1i32).to_be_bytes());
        fix_crc(&mut b);
        assert!(decode_batch(&mut Bytes::from(b)).is_err());
        let mut m = encoded(Compression::None, 0);
        m[crate::storage::batch::MAGIC_OFFSET] = 1;
        assert!(decode_batch(&mut Bytes::from(m)).is_err());
        assert!(decode_batch(&mut Bytes::from_static(&[0; 20])).is_err());
    }
}
