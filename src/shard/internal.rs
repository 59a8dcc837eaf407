//! Appends to internal topics (`__consumer_offsets`, `__transaction_state`)
//! by the coordinators that own their partitions.

use std::rc::Rc;

use super::error::InternalAppendError;
use super::now_ms;
use super::partition::Partition;
use crate::storage::{AppendResult, BatchHeader, ValidatedBatch};
use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions};

/// Appends `records` (key, value or `None` for a tombstone) to `part` as one
/// uncompressed v2 RecordBatch and waits for the flush policy, as acks=all
/// does. With `producer = Some((producer id, epoch))` the batch is
/// transactional (KIP-98; TxnOffsetCommit writes offsets this way, base
/// sequence -1). Gives the offset of the last record, or the
/// [`InternalAppendError`] (`Storage`/`Flush`: KAFKA_STORAGE_ERROR on I/O;
/// `Encode`: UNKNOWN_SERVER_ERROR if encoding fails).
pub async fn append_records(
    part: &Rc<Partition>,
    records: Vec<(Bytes, Option<Bytes>)>,
    producer: Option<(i64, i16)>,
) -> Result<i64, InternalAppendError> {
    let ts = now_ms();
    let recs: Vec<Record> = records
        .into_iter()
        .enumerate()
        .map(|(i, (k, v))| {
            let mut r = crate::protocol::plain_record(i as i64, ts, Some(k), v);
            if let Some((pid, epoch)) = producer {
                r.transactional = true;
                r.producer_id = pid;
                r.producer_epoch = epoch;
            }
            r
        })
        .collect();
    if recs.is_empty() {
        return Ok(part.log_end_offset() - 1);
    }
    let bytes = encode_batch(&recs)?;
    let res = append_encoded(part, bytes, ts).await?;
    Ok(res.last_offset)
}

/// Encodes `records` as uncompressed v2 RecordBatch bytes (the protocol
/// crate takes the batch attributes and producer fields from the first
/// record). Errors with [`InternalAppendError::Encode`]
/// (UNKNOWN_SERVER_ERROR) if encoding fails.
pub fn encode_batch(records: &[Record]) -> Result<Bytes, InternalAppendError> {
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &opts).map_err(|e| {
        log::error!("cannot encode an internal record batch: {e}");
        InternalAppendError::Encode {
            records: records.len(),
        }
    })?;
    Ok(buf.freeze())
}

/// How long an internal append waits for its partition's ISR (Kafka's
/// `offsets.commit.timeout.ms` default, 5 s).
pub const INTERNAL_REPLICATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Appends RecordBatches this broker encoded itself (internal records,
/// transaction markers): the client-side rules of `validate_batches` (no
/// control batches, sequences for producer ids) do not apply to it. Waits
/// for the flush policy and, on a replicated partition, for the ISR to hold
/// the records (`Replication`, within [`INTERNAL_REPLICATION_TIMEOUT`]).
/// Errors with `Storage`/`Flush` (KAFKA_STORAGE_ERROR)
/// on I/O, `Malformed` (UNKNOWN_SERVER_ERROR) when the bytes are not whole
/// batches.
pub async fn append_encoded(
    part: &Rc<Partition>,
    bytes: Bytes,
    now_ms: i64,
) -> Result<AppendResult, InternalAppendError> {
    let mut batches = Vec::new();
    let mut pos = 0usize;
    while pos < bytes.len() {
        let header = bytes
            .get(pos..)
            .and_then(|b| BatchHeader::parse(b).ok())
            .ok_or_else(|| {
                log::error!(
                    "internal batch for {}-{} is malformed",
                    part.topic(),
                    part.index()
                );
                InternalAppendError::Malformed { position: pos }
            })?;
        let size = header.total_size();
        if size == 0 || pos + size > bytes.len() {
            return Err(InternalAppendError::Malformed { position: pos });
        }
        batches.push(ValidatedBatch {
            position: pos,
            size,
            header,
        });
        pos += size;
    }
    let fail = |e: crate::storage::StorageError| {
        log::error!("append to {}-{} failed: {e}", part.topic(), part.index());
        InternalAppendError::Storage(e)
    };
    let appending = part.append(&bytes, &batches, now_ms).map_err(fail)?;
    let (res, needs_flush) = appending.finish().await.map_err(fail)?;
    if needs_flush {
        part.wait_flushed(res.last_offset + 1).await?;
    }
    // As Kafka writes coordinator records and markers with acks=all: on a
    // replicated partition they count once the ISR holds them.
    let deadline = std::time::Instant::now() + INTERNAL_REPLICATION_TIMEOUT;
    part.wait_replicated(res.last_offset + 1, deadline).await?;
    Ok(res)
}

/// Reads `part` from its log start to its log end and calls `f` with every
/// record (start-up replay of an internal topic, before the shard serves
/// requests, or when this broker becomes its leader). The whole log, not
/// only below the high watermark, as Kafka's coordinators load with
/// `FetchIsolation.LOG_END`: a follower just made leader has every
/// acknowledged write while its high watermark may still lag. Stops at the
/// first unreadable batch, logging why. Gives the number of records read.
pub fn for_each_record(part: &Partition, mut f: impl FnMut(&Record)) -> usize {
    let (mut offset, end) = (part.log_start_offset(), part.log_end_offset());
    let mut seen = 0usize;
    while offset < end {
        let read = match part.read_replica_in(
            offset,
            1 << 20,
            crate::storage::segment::ReadMode::Blocking,
        ) {
            Ok(r) => r.read,
            Err(e) => {
                log::error!("loading {}-{}: {e}", part.topic(), part.index());
                return seen;
            }
        };
        if read.bytes == 0 {
            break;
        }
        let mut bytes = Vec::with_capacity(read.bytes as usize);
        for r in &read.regions {
            let start = bytes.len();
            bytes.resize(start + r.len as usize, 0);
            if let Err(e) =
                std::os::unix::fs::FileExt::read_exact_at(&*r.file, &mut bytes[start..], r.position)
            {
                log::error!("loading {}-{}: {e}", part.topic(), part.index());
                return seen;
            }
        }
        let mut buf = Bytes::from(bytes);
        let sets = match crate::storage::records::decode_batches(&mut buf) {
            Ok(s) => s,
            Err(e) => {
                log::error!(
                    "loading {}-{} at offset {offset}: {e}",
                    part.topic(),
                    part.index()
                );
                return seen;
            }
        };
        let before = offset;
        for set in sets {
            for r in &set.records {
                offset = offset.max(r.offset + 1);
                seen += 1;
                f(r);
            }
        }
        if offset == before {
            break;
        }
    }
    seen
}
