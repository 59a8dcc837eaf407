//! The owner's read side of a partition: Fetch reads with an isolation
//! level, the offsets ListOffsets answers from, the producers
//! DescribeProducers lists, and small accessors the handlers use.

use std::rc::Rc;
use std::sync::Arc;

use uuid::Uuid;

use super::{Partition, READ_COMMITTED};
use crate::cluster::leadership::{self, LeadershipError, ReplicaState, Requester};
use crate::shard::notify::Notify;
use crate::storage::{ReadMode, ReadResult, StorageError};

/// A fetch read with its isolation level applied (see
/// [`Partition::read_isolated`]).
#[derive(Debug, Clone)]
pub struct IsolatedRead {
    /// Whole batches (below the high watermark, or the LSO for READ_COMMITTED).
    pub read: ReadResult,
    /// The last stable offset at read time.
    pub last_stable_offset: i64,
    /// READ_COMMITTED: (producer id, first offset) of the aborted
    /// transactions overlapping the returned range, by first offset;
    /// READ_UNCOMMITTED: None (the Fetch response's null list).
    pub aborted: Option<Vec<(i64, i64)>>,
}

impl IsolatedRead {
    /// Gives the end (exclusive offset) of the range whose aborted
    /// transactions a READ_COMMITTED response lists: the end of the returned
    /// data capped at the LSO, or the LSO when nothing is returned.
    pub fn aborted_upper(&self) -> i64 {
        if self.read.bytes > 0 {
            self.read.end_offset.min(self.last_stable_offset)
        } else {
            self.last_stable_offset
        }
    }

    /// Takes an offset; drops the aborted transactions starting at or after
    /// it (they do not overlap [fetch offset, `upper`)).
    pub fn keep_aborted_below(&mut self, upper: i64) {
        if let Some(a) = self.aborted.as_mut() {
            a.retain(|(_, first)| *first < upper);
        }
    }
}

/// One active producer of a partition, as DescribeProducers lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerSummary {
    /// Producer id.
    pub producer_id: i64,
    /// Its current epoch.
    pub producer_epoch: i16,
    /// Sequence of its last appended record.
    pub last_sequence: i32,
    /// Timestamp of its last appended batch (ms).
    pub last_timestamp: i64,
    /// Epoch of the coordinator that wrote its last marker, -1 if none.
    pub coordinator_epoch: i32,
    /// First offset of its ongoing transaction, -1 if none.
    pub current_txn_start_offset: i64,
}

impl Partition {
    /// Gives the topic name.
    pub fn topic(&self) -> &Arc<str> {
        &self.topic
    }

    /// Gives the partition index.
    pub fn index(&self) -> i32 {
        self.index
    }

    /// Gives the topic id (KIP-516).
    pub fn topic_id(&self) -> Uuid {
        self.topic_id
    }

    /// Gives the partition's leader epoch, as the last applied image set it
    /// (written into appended batches).
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.get()
    }

    /// Whether this broker leads the partition (as of the last image).
    pub fn is_leader(&self) -> bool {
        self.is_leader.get()
    }

    /// Takes the partition's leadership from the metadata image: whether
    /// this broker leads it and the leader epoch.
    pub fn set_leadership(&self, is_leader: bool, leader_epoch: i32) {
        self.is_leader.set(is_leader);
        self.leader_epoch.set(leader_epoch);
    }

    /// Gives this broker's replica state (leadership and leader epoch) as
    /// the last applied image set it.
    pub fn replica_state(&self) -> ReplicaState {
        ReplicaState {
            is_leader: self.is_leader(),
            leader_epoch: self.leader_epoch(),
        }
    }

    /// Takes who asks and the request's `current_leader_epoch` (None: not
    /// checked); gives whether this replica may serve the request
    /// (`cluster::leadership::check_replica`: FENCED_LEADER_EPOCH,
    /// UNKNOWN_LEADER_EPOCH (KIP-320), then NOT_LEADER_OR_FOLLOWER).
    pub fn check_access(
        &self,
        requester: Requester,
        current_leader_epoch: Option<i32>,
    ) -> Result<(), LeadershipError> {
        leadership::check_replica(self.replica_state(), requester, current_leader_epoch)
    }

    /// Gives the signal bumped after every commit (long-poll fetches wait
    /// on its generation).
    pub fn append_signal(&self) -> &Rc<Notify> {
        &self.appended
    }

    /// Gives the log start offset.
    pub fn log_start_offset(&self) -> i64 {
        self.log.borrow().log_start_offset()
    }

    /// Gives the log end offset (the next offset to commit).
    pub fn log_end_offset(&self) -> i64 {
        self.log.borrow().log_end_offset()
    }

    /// Gives the high watermark.
    pub fn high_watermark(&self) -> i64 {
        self.log.borrow().high_watermark()
    }

    /// Gives the bytes the log's segments take (DescribeLogDirs).
    pub fn size_bytes(&self) -> u64 {
        self.log.borrow().size_bytes()
    }

    /// Gives the number of the log's segments.
    pub fn segment_count(&self) -> usize {
        self.log.borrow().segment_count()
    }

    /// Takes a timestamp (ms); gives (base offset, max timestamp) of the
    /// first batch whose max timestamp is >= it, or None (see
    /// `PartitionLog::offset_for_timestamp`). Errors with the I/O failure.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>, StorageError> {
        self.log.borrow().offset_for_timestamp(ts)
    }

    /// Gives (last offset, timestamp) of the batch holding the largest
    /// timestamp, or None for an empty log (see
    /// `PartitionLog::max_timestamp_offset`). Errors with the I/O failure.
    pub fn max_timestamp_offset(&self) -> Result<Option<(i64, i64)>, StorageError> {
        self.log.borrow().max_timestamp_offset()
    }

    /// Takes a producer id; gives the epoch the partition knows for it, or
    /// None.
    pub fn producer_epoch(&self, producer_id: i64) -> Option<i16> {
        self.producers.borrow().get(producer_id).map(|e| e.epoch)
    }

    /// Gives the active producers' state (DescribeProducers), by producer
    /// id.
    pub fn describe_producers(&self) -> Vec<ProducerSummary> {
        let txns = self.txns.borrow();
        self.producers
            .borrow()
            .snapshot()
            .into_iter()
            .map(|(id, epoch, seq, ts)| ProducerSummary {
                producer_id: id,
                producer_epoch: epoch,
                last_sequence: seq,
                last_timestamp: ts,
                coordinator_epoch: txns.coordinator_epoch(id).unwrap_or(-1),
                current_txn_start_offset: txns.ongoing_first_offset(id).unwrap_or(-1),
            })
            .collect()
    }

    /// Gives the last stable offset (KIP-98): min(first offset of every
    /// ongoing transaction, clamped to the log start offset; high
    /// watermark). Equal to the high watermark when no transaction is open.
    pub fn last_stable_offset(&self) -> i64 {
        let log = self.log.borrow();
        self.txns
            .borrow()
            .last_stable_offset(log.log_start_offset(), log.high_watermark())
    }

    /// Fetch read with an isolation level (Fetch v4+ `isolation_level`):
    /// 0 (READ_UNCOMMITTED) reads up to the high watermark with no aborted
    /// list; 1 (READ_COMMITTED) reads whole batches whose last offset is
    /// below the LSO and lists the aborted transactions overlapping
    /// [fetch offset, end of the returned data) — or [fetch offset, LSO)
    /// when nothing is returned — as (producer id, first offset) by first
    /// offset (Kafka `collectAbortedTransactions`). Errors as
    /// `PartitionLog::read_bounded` (OFFSET_OUT_OF_RANGE, KAFKA_STORAGE_ERROR).
    pub fn read_isolated(
        &self,
        offset: i64,
        max_bytes: u64,
        min_one_batch: bool,
        isolation_level: i8,
    ) -> Result<IsolatedRead, StorageError> {
        let mut r = self.read_isolated_in(
            offset,
            max_bytes,
            min_one_batch,
            isolation_level,
            ReadMode::Blocking,
        )?;
        let upper = r.aborted_upper();
        r.keep_aborted_below(upper);
        Ok(r)
    }

    /// As [`Self::read_isolated`], with batch headers read in `mode` (under
    /// [`ReadMode::NoWait`], [`StorageError::NotCached`] when a header is
    /// not in the page cache) and, for READ_COMMITTED, the aborted
    /// transactions overlapping [fetch offset, LSO): the widest list any
    /// cut of the returned batches can need. A caller that keeps all or
    /// part of the data narrows it with [`IsolatedRead::keep_aborted_below`].
    pub fn read_isolated_in(
        &self,
        offset: i64,
        max_bytes: u64,
        min_one_batch: bool,
        isolation_level: i8,
        mode: ReadMode,
    ) -> Result<IsolatedRead, StorageError> {
        let lso = self.last_stable_offset();
        let bound = if isolation_level == READ_COMMITTED {
            lso
        } else {
            self.log.borrow().high_watermark()
        };
        let read =
            self.log
                .borrow()
                .read_bounded_in(offset, max_bytes, min_one_batch, bound, mode)?;
        let aborted = (isolation_level == READ_COMMITTED)
            .then(|| self.txns.borrow().aborted_in_range(offset, lso));
        Ok(IsolatedRead {
            read,
            last_stable_offset: lso,
            aborted,
        })
    }

    /// A follower's Fetch read (Kafka `FetchIsolation.LOG_END`): whole
    /// batches up to the LEO, not only below the high watermark — the
    /// follower must copy what the leader has to move the high watermark.
    /// Headers are read with `mode` as [`Self::read_isolated_in`]; the
    /// LSO is given for the response. Errors as
    /// `PartitionLog::read_bounded` (OFFSET_OUT_OF_RANGE, KAFKA_STORAGE_ERROR).
    pub fn read_replica_in(
        &self,
        offset: i64,
        max_bytes: u64,
        mode: ReadMode,
    ) -> Result<IsolatedRead, StorageError> {
        let lso = self.last_stable_offset();
        let log = self.log.borrow();
        let leo = log.log_end_offset();
        let read = log.read_bounded_in(offset, max_bytes, true, leo, mode)?;
        Ok(IsolatedRead {
            read,
            last_stable_offset: lso,
            aborted: None,
        })
    }

    /// Reads whole batches (see `storage::PartitionLog::read`).
    pub fn read(
        &self,
        offset: i64,
        max_bytes: u64,
        min_one_batch: bool,
    ) -> Result<ReadResult, StorageError> {
        self.log.borrow().read(offset, max_bytes, min_one_batch)
    }
}
