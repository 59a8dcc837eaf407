//! The producer and transaction state of a partition rebuilt from its log
//! at open (from the newest producer-state snapshot on), and the snapshot
//! files written at a segment roll and a clean stop (KIP-98).

use super::*;

/// Applies one appended batch (header, offset of its first record, and the
/// marker for a control batch) to the producer and transaction state; gives
/// the aborted transaction an ABORT marker completed.
pub(super) fn apply_batch(
    producers: &mut ProducerStateMap,
    txns: &mut PartitionTxns,
    h: &BatchHeader,
    first_offset: i64,
    marker: Option<ControlMarker>,
) -> Option<AbortedTxn> {
    if h.is_control() {
        producers.apply_marker(h);
        match marker {
            Some(m) if h.producer_id >= 0 => txns.on_marker(h.producer_id, first_offset, m),
            _ => None,
        }
    } else {
        producers.update(h, first_offset);
        txns.on_data_batch(h, first_offset);
        None
    }
}

/// Rebuilds a partition's producer and transaction state at start-up: from
/// the newest producer-state snapshot at or below the log end (and the
/// `.txnindex` files below it) plus the batches after it, or from the whole
/// log when there is no usable snapshot. Rewrites `.txnindex` files that
/// disagree with the result.
pub(crate) fn rebuild_state(
    topic: &str,
    index: i32,
    log: &PartitionLog,
) -> (ProducerStateMap, PartitionTxns) {
    let mut producers = ProducerStateMap::default();
    let mut txns = PartitionTxns::default();
    let start = log.log_start_offset();
    let mut from = start;
    // A snapshot below the log start is not used: the markers between it
    // and the log start are gone, so it would bring back transactions that
    // ended there.
    let usable = snapshot::latest(log.dir(), log.log_end_offset()).filter(|(o, _)| *o >= start);
    if let Some((offset, entries)) = usable {
        match log.txn_index_entries_below(offset) {
            Ok(aborted) => {
                snapshot::restore(&entries, &mut producers, &mut txns);
                txns.set_aborted(aborted);
                from = offset;
                ::log::info!(
                    "{topic}-{index}: producer state from the snapshot at offset {offset} ({} producers)",
                    entries.len()
                );
            }
            Err(e) => ::log::warn!(
                "{topic}-{index}: cannot read aborted-transaction indexes ({e}); rebuilding from the whole log"
            ),
        }
    }
    match log.batches_with_markers(from) {
        Ok(batches) => {
            for (h, marker) in &batches {
                apply_batch(&mut producers, &mut txns, h, h.base_offset, *marker);
            }
            // The log is the source of truth for the `.txnindex` files.
            if let Err(e) = log.sync_txn_indexes(txns.aborted(), from) {
                ::log::warn!("{topic}-{index}: cannot rewrite aborted-transaction indexes: {e}");
            }
            txns.drop_aborted_before(start);
        }
        Err(e) => {
            ::log::warn!("{topic}-{index}: cannot rebuild producer and transaction state: {e}")
        }
    }
    (producers, txns)
}

/// A partition's log opened (recovered) with its producer and transaction
/// state rebuilt: the slow part of opening a partition, done off the
/// shard ([`Rebuilt::open`] on a background thread), then given to
/// [`Partition::from_rebuilt`] on the shard.
pub struct Rebuilt {
    pub(super) log: PartitionLog,
    pub(super) producers: ProducerStateMap,
    pub(super) txns: PartitionTxns,
}

impl Rebuilt {
    /// Takes the partition's topic name, index, directory and log config;
    /// opens and recovers the log (`PartitionLog::open`) and rebuilds the
    /// state ([`rebuild_state`]). Blocking. Errors as `PartitionLog::open`
    /// (`Io`, `Corrupt`: KAFKA_STORAGE_ERROR).
    pub fn open(
        topic: &str,
        index: i32,
        dir: &std::path::Path,
        config: crate::storage::LogConfig,
    ) -> Result<Rebuilt, StorageError> {
        let log = PartitionLog::open(dir, config)?;
        Ok(Rebuilt::from_log(topic, index, log))
    }

    /// Takes an opened log; rebuilds its state ([`rebuild_state`], blocking).
    pub fn from_log(topic: &str, index: i32, log: PartitionLog) -> Rebuilt {
        let (producers, txns) = rebuild_state(topic, index, &log);
        Rebuilt {
            log,
            producers,
            txns,
        }
    }

    /// Takes the high watermark a checkpoint kept for the partition (see
    /// `PartitionLog::restore_high_watermark`).
    pub fn restore_high_watermark(&mut self, checkpointed: Option<i64>) {
        self.log.restore_high_watermark(checkpointed);
    }

    /// Gives the log end offset of the opened log.
    pub fn log_end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }

    /// Takes the leader epoch this broker leads the opened partition in;
    /// adds (epoch, LEO) to its leader-epoch cache and writes the
    /// checkpoint durably on the calling thread, before the partition is
    /// served (Kafka's `Partition.makeLeader` does it while applying the
    /// metadata, before the leadership is served), so the shard's I/O
    /// thread never queues the appends of every partition behind the
    /// checkpoint writes of a topic's creation. Blocking: the background
    /// thread of an open calls it. Gives whether the entry was added;
    /// errors with the failed write (`Io`, KAFKA_STORAGE_ERROR).
    pub fn assign_leader_epoch(&mut self, epoch: i32) -> Result<bool, StorageError> {
        self.log.assign_epoch_start_offset(epoch)
    }
}

/// Producer-state snapshots kept per partition.
const SNAPSHOTS_KEPT: usize = 2;

/// fsyncs `indexes`, then writes the snapshot of `entries` at `offset`.
pub(super) fn write_snapshot_files(
    dir: &std::path::Path,
    offset: i64,
    entries: &[snapshot::SnapshotEntry],
    indexes: &[std::path::PathBuf],
) -> std::io::Result<()> {
    for p in indexes {
        match std::fs::File::open(p) {
            Ok(f) => f.sync_all()?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    snapshot::write(dir, offset, entries, SNAPSHOTS_KEPT)
}
