//! Fetch on the partition's owner: reads of one partition's log as file
//! regions of whole batches (no record bytes are copied), for a consumer
//! (up to the high watermark, or the LSO with the aborted transactions under
//! READ_COMMITTED) or a follower (up to the LEO; its fetch offset is its
//! LEO, which may move the high watermark and bring it back into the ISR,
//! and a diverging epoch is answered first, KIP-320). [`read_on`] and
//! [`reread_on`] make their own cross-shard call; the Fetch handler plans,
//! cuts to the response budget (KIP-74) and encodes.

use std::sync::Arc;

use crate::cluster::leadership::{LeadershipError, Requester};
use crate::mesh::ShardError;
use crate::shard::write_stats::WRITE_STATS;
use crate::shard::{now_ms, Shard};
use crate::storage::{cache, ReadMode, StorageError};

/// A range of a `.log` file holding whole batches, sent with sendfile(2).
pub use crate::storage::FileRegion;

/// One partition to read, as sent to its owner.
#[derive(Debug, Clone)]
pub struct PartitionRead {
    /// Topic name.
    pub topic: Arc<str>,
    /// Partition index.
    pub partition: i32,
    /// First offset wanted.
    pub fetch_offset: i64,
    /// Per-partition limit (bytes), `partition_max_bytes`.
    pub partition_max_bytes: u64,
    /// The request's `isolation_level` (v4+): 0 READ_UNCOMMITTED, 1
    /// READ_COMMITTED (data below the LSO only, KIP-98).
    pub isolation_level: i8,
    /// The partition's `current_leader_epoch` (v9+, KIP-320); None when
    /// not given (negative on the wire): not checked.
    pub current_leader_epoch: Option<i32>,
    /// Who fetches (a consumer or a follower replica; see [`requester`]).
    pub requester: Requester,
    /// The epoch of the last batch the fetcher has (v12+
    /// `last_fetched_epoch`); None when not given (-1): no divergence check.
    pub last_fetched_epoch: Option<i32>,
}

/// Why a partition read gives no data; each maps to its Kafka code in
/// `crate::error`.
#[derive(Debug, thiserror::Error)]
pub enum FetchReadError {
    /// Not the leader here, or the `current_leader_epoch` is fenced or
    /// unknown (KIP-320): NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
    /// UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION.
    #[error(transparent)]
    Leadership(#[from] LeadershipError),
    /// The log refused the read (OFFSET_OUT_OF_RANGE, KAFKA_STORAGE_ERROR, …):
    /// the storage error's code.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// The owner's read of one partition.
#[derive(Debug, Default)]
pub struct OwnerRead {
    /// Why there is no data (None: read). OFFSET_OUT_OF_RANGE comes with
    /// the log's bounds filled in.
    pub error: Option<FetchReadError>,
    /// High watermark; -1 on an error without the log's bounds.
    pub high_watermark: i64,
    /// Last stable offset (KIP-98; == high watermark with no open transaction).
    pub last_stable_offset: i64,
    /// Log start offset.
    pub log_start_offset: i64,
    /// Whole batches to send, as `.log` file ranges.
    pub regions: Vec<FileRegion>,
    /// Sum of the regions' lengths (bytes).
    pub bytes: u64,
    /// Size (bytes) of the first batch of the regions, 0 when none.
    pub first_batch_bytes: u64,
    /// Offset after the returned data (see `storage::ReadResult::end_offset`).
    pub end_offset: i64,
    /// Append-signal generation seen at read time (to wait without a race).
    pub generation: u64,
    /// READ_COMMITTED: (producer id, first offset) of the aborted
    /// transactions overlapping [fetch offset, LSO); None for READ_UNCOMMITTED.
    pub aborted_transactions: Option<Vec<(i64, i64)>>,
    /// (epoch, end offset) where the fetcher's log stops agreeing with
    /// this one (v12+ `diverging_epoch`, KIP-320); no data is sent with it.
    pub diverging_epoch: Option<(i32, i64)>,
}

impl OwnerRead {
    /// No data and unknown bounds (-1): the answer of a partition that
    /// was not read.
    pub fn empty() -> OwnerRead {
        OwnerRead {
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            ..Default::default()
        }
    }

    fn failed(error: FetchReadError) -> OwnerRead {
        OwnerRead {
            error: Some(error),
            ..OwnerRead::empty()
        }
    }
}

/// Takes the owner shard of `reads` and the response's `max_bytes`; reads
/// each partition there with its own limit (`partition_max_bytes` capped
/// at `max_bytes`, bytes) and the first batch even if larger, one
/// cross-shard call for all. Gives one read per partition, in order, or the
/// mesh's error when the owner did not answer.
pub async fn read_on(
    shard: &Shard,
    owner: usize,
    reads: Vec<PartitionRead>,
    max_bytes: u64,
) -> Result<Vec<OwnerRead>, ShardError> {
    shard
        .invoke_on(owner, move |s| async move {
            read_on_owner(&s, &reads, max_bytes).await
        })
        .await
}

/// Takes the owner shard of one partition, its read, an exact byte limit and
/// KIP-74's `allow_oversize`; reads it again there (the budget's second
/// round, when only part of a first read fits).
pub async fn reread_on(
    shard: &Shard,
    owner: usize,
    read: PartitionRead,
    limit: u64,
    allow_oversize: bool,
) -> Result<OwnerRead, ShardError> {
    shard
        .invoke_on(owner, move |s| async move {
            read_partition(&s, &read, limit, allow_oversize).await
        })
        .await
}

/// Reads of batch headers that found them out of the page cache and warmed
/// them before this many tries; the next read may block (logged at debug).
const NOT_CACHED_TRIES: u32 = 3;

/// Runs on the owner: reads one partition with a byte limit (`limit`,
/// bytes) and KIP-74's `allow_oversize` (the first batch even if larger).
/// Batch headers are read without waiting for the disk; a header out of the
/// page cache is warmed on the blocking pool and the read retried, at most
/// `NOT_CACHED_TRIES` (3) times, then read blocking. Gives the partition's
/// read (errors typed; a not-cached outcome never gets out).
async fn read_partition(
    shard: &Shard,
    r: &PartitionRead,
    limit: u64,
    allow_oversize: bool,
) -> OwnerRead {
    let mut tries = 0u32;
    loop {
        let part = match shard.serving(&r.topic, r.partition, r.requester, r.current_leader_epoch) {
            Ok(part) => part,
            Err(e) => return OwnerRead::failed(e.into()),
        };
        let mode = if tries < NOT_CACHED_TRIES {
            ReadMode::NoWait
        } else {
            ReadMode::Blocking
        };
        let mut out = OwnerRead {
            generation: part.append_signal().generation(),
            ..OwnerRead::default()
        };
        let read = match r.requester {
            Requester::Follower { replica_id } => {
                // Kafka `Partition.fetchRecords`: a broker that is not a
                // replica here is refused (NOT_LEADER_OR_FOLLOWER).
                if !part.has_follower(replica_id) {
                    return OwnerRead::failed(
                        LeadershipError::UnknownFollower { replica_id }.into(),
                    );
                }
                // Kafka `Partition.fetchRecords`: a follower whose last
                // fetched epoch ends before its fetch offset here, or is
                // unknown here, diverges; it truncates before fetching on.
                if let Some(diverging) = r
                    .last_fetched_epoch
                    .and_then(|last| diverging_epoch(&part, last, r.fetch_offset))
                {
                    out.diverging_epoch = Some(diverging);
                    out.high_watermark = part.high_watermark();
                    out.last_stable_offset = part.last_stable_offset();
                    out.log_start_offset = part.log_start_offset();
                    out.end_offset = r.fetch_offset;
                    return out;
                }
                // The fetch offset is the follower's LEO: it may move the
                // high watermark and bring the follower back into the ISR.
                let alive = shard.metadata().is_alive(replica_id);
                if let Some(change) =
                    part.follower_fetched(replica_id, r.fetch_offset, alive, now_ms())
                {
                    crate::shard::isr_change::propose(part.clone(), change);
                }
                part.read_replica_in(r.fetch_offset, limit, mode)
            }
            Requester::Client => part.read_isolated_in(
                r.fetch_offset,
                limit,
                allow_oversize,
                r.isolation_level,
                mode,
            ),
        };
        match read {
            Ok(iso) => {
                let res = iso.read;
                out.high_watermark = res.high_watermark;
                out.last_stable_offset = iso.last_stable_offset;
                out.aborted_transactions = iso.aborted;
                out.log_start_offset = res.log_start_offset;
                out.bytes = res.bytes;
                out.first_batch_bytes = res.first_batch_bytes;
                out.end_offset = res.end_offset;
                out.regions = res.regions;
            }
            Err(StorageError::NotCached {
                file,
                path,
                position,
                len,
            }) => {
                drop(part);
                tries += 1;
                if tries >= NOT_CACHED_TRIES {
                    log::debug!(
                        "{}: batch headers at {position} still not cached after {tries} warms; \
                         reading blocking",
                        path.display()
                    );
                }
                match cache::warm(file, position, len).await {
                    Ok(n) => WRITE_STATS.with(|s| {
                        s.header_warms.set(s.header_warms.get() + 1);
                        s.header_bytes_warmed.set(s.header_bytes_warmed.get() + n);
                    }),
                    Err(e) => log::debug!("{}: warming {position}: {e}", path.display()),
                }
                continue;
            }
            Err(e) => {
                if let StorageError::OffsetOutOfRange {
                    log_start_offset,
                    log_end_offset,
                    ..
                } = &e
                {
                    out.high_watermark = *log_end_offset;
                    out.last_stable_offset = part.last_stable_offset();
                    out.log_start_offset = *log_start_offset;
                }
                out.error = Some(e.into());
            }
        }
        return out;
    }
}

/// Takes the leader's partition, a follower's `last_fetched_epoch` and its
/// fetch offset; gives (epoch, end offset) of the leader's log for that
/// epoch when the follower's log diverges from it: the leader's largest
/// epoch up to `last` is older than `last`, or ends before the fetch
/// offset (Kafka `Partition.validateFetchOffsetAndMaybeGetDivergingEpoch`).
fn diverging_epoch(
    part: &crate::shard::partition::Partition,
    last: i32,
    fetch_offset: i64,
) -> Option<(i32, i64)> {
    let (epoch, end) = part.end_offset_for_epoch(last)?;
    (epoch < last || end < fetch_offset).then_some((epoch, end))
}

/// Runs on the owner: reads each partition with its own limit
/// (`partition_max_bytes` capped at `max_bytes`, bytes) and the first batch
/// even if larger, as if it were the request's first partition with data.
/// The connection's shard cuts the results to the response budget in request
/// order (`handlers::fetch::cut_to_budget`). Regions are file references: no record bytes are
/// read here.
async fn read_on_owner(shard: &Shard, reads: &[PartitionRead], max_bytes: u64) -> Vec<OwnerRead> {
    let mut out = Vec::with_capacity(reads.len());
    for r in reads {
        out.push(read_partition(shard, r, r.partition_max_bytes.min(max_bytes), true).await);
    }
    out
}
