//! Appends to internal topics (`__consumer_offsets`, `__transaction_state`)
//! by the coordinators that own their partitions.

use std::rc::Rc;

use super::error::{InternalAppendError, ReplayError};
use super::now_ms;
use super::partition::Partition;
use crate::storage::cache;
use crate::storage::segment::ReadMode;
use crate::storage::{AppendResult, BatchHeader, StorageError, ValidatedBatch};
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

/// Bytes read per chunk when a coordinator loads its partition
/// ([`replay_log`]): 1 MiB, so a chunk's decode stays well under the
/// reactor-stall threshold.
pub const LOAD_CHUNK_BYTES: u64 = 1 << 20;

/// Header reads of [`replay_log`] that may find them out of the page cache
/// and warm them before one waits for the disk.
const NOT_CACHED_TRIES: u32 = 3;

/// Reads `part` from its log start to its log end, one chunk of at most
/// [`LOAD_CHUNK_BYTES`] at a time, and gives each chunk's records, in
/// offset order, to `f`, which answers whether to go on (a coordinator
/// loading its partition, when this broker becomes its leader). The whole
/// log, not only below the high watermark, as Kafka's coordinators load
/// with `FetchIsolation.LOG_END`: a follower just made leader has every
/// acknowledged write while its high watermark may still lag. Records
/// appended while it reads are read too: it ends when it reaches the log
/// end, and the caller's next step runs in the same poll, so no record
/// falls between the load and what follows it.
///
/// The reactor never waits for the disk: batch headers are located without
/// waiting (warmed on glommio's blocking pool when not cached), each chunk's
/// bytes are read on the blocking pool, and the task yields between chunks.
/// Gives the number of records read, or the first error
/// ([`ReplayError`]); what was given to `f` before it stays given.
pub async fn replay_log(
    part: &Rc<Partition>,
    mut f: impl FnMut(&[Record]) -> bool,
) -> Result<usize, ReplayError> {
    let mut offset = part.log_start_offset();
    let mut seen = 0usize;
    let mut tries = 0u32;
    while offset < part.log_end_offset() {
        let mode = if tries < NOT_CACHED_TRIES {
            ReadMode::NoWait
        } else {
            ReadMode::Blocking
        };
        let read = match part.read_replica_in(offset, LOAD_CHUNK_BYTES, mode) {
            Ok(r) => r.read,
            Err(StorageError::NotCached {
                file,
                position,
                len,
                ..
            }) => {
                tries += 1;
                if let Err(e) = cache::warm(file, position, len).await {
                    log::debug!("{}-{}: warming {position}: {e}", part.topic(), part.index());
                }
                continue;
            }
            // Retention or DeleteRecords moved the log start past the
            // chunk meanwhile: go on from there.
            Err(StorageError::OffsetOutOfRange {
                log_start_offset, ..
            }) if log_start_offset > offset => {
                offset = log_start_offset;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        tries = 0;
        if read.bytes == 0 {
            break;
        }
        let regions = read.regions;
        let bytes = glommio::executor()
            .spawn_blocking(move || read_regions(&regions))
            .await?;
        let mut buf = Bytes::from(bytes);
        let sets = crate::storage::records::decode_batches(&mut buf)?;
        let mut records = Vec::new();
        for set in sets {
            records.extend(set.records);
        }
        // Past the chunk: its last record, or the batch boundary after it
        // (a batch that compaction emptied holds no record).
        let next = records
            .last()
            .map_or(read.end_offset, |r| r.offset + 1)
            .max(read.end_offset);
        seen += records.len();
        if !f(&records) || next <= offset {
            break;
        }
        offset = next;
        glommio::yield_if_needed().await;
    }
    Ok(seen)
}

/// The bytes of `regions`, one after another (blocking preads: run off the
/// reactor).
pub(crate) fn read_regions(regions: &[crate::storage::FileRegion]) -> std::io::Result<Vec<u8>> {
    let total: u64 = regions.iter().map(|r| r.len).sum();
    let mut bytes = vec![0u8; usize::try_from(total).unwrap_or(0)];
    let mut at = 0usize;
    for r in regions {
        let len = r.len as usize;
        let Some(dst) = bytes.get_mut(at..at + len) else {
            return Err(std::io::Error::other("region lengths exceed their total"));
        };
        std::os::unix::fs::FileExt::read_exact_at(&*r.file, dst, r.position)?;
        at += len;
    }
    Ok(bytes)
}
