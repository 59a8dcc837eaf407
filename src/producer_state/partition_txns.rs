//! Per-partition transaction state (KIP-98): the ongoing transactions, the
//! aborted ones, and from them the last stable offset (LSO).
//!
//! - A transactional batch (attributes bit 4, not a control batch) of a
//!   producer with no ongoing transaction starts one at the batch's first
//!   offset.
//! - A control batch (attributes bit 5) of that producer ends it. An ABORT
//!   marker records an [`AbortedTxn`] `{producer_id, first_offset,
//!   last_offset = marker offset, last_stable_offset}` where
//!   `last_stable_offset` is the LSO right after the transaction completed:
//!   the first offset of the oldest other ongoing transaction, else the
//!   marker offset + 1 (Kafka `ProducerStateManager.lastStableOffset`). A
//!   marker without an ongoing transaction completes an empty one starting
//!   at the marker (as Kafka's `appendEndTxnMarker` does).
//! - LSO = min(first offset of every ongoing transaction (never below the
//!   log start offset), high watermark).
//!
//! The state is kept up to date by every append. At start-up it is restored
//! from the newest producer-state snapshot (open transactions, coordinator
//! epochs) and the `.txnindex` files below it (aborted transactions), then
//! rebuilt from the log after the snapshot's offset; without a snapshot,
//! from the whole log (see `Partition::new`).

use std::collections::HashMap;

use super::ProducerStateError;
pub use crate::storage::txn_index::AbortedTxn;
use crate::storage::txn_index::ControlMarker;
use crate::storage::BatchHeader;

/// The transaction state of one partition.
#[derive(Debug, Default)]
pub struct PartitionTxns {
    /// Ongoing transactions: producer id → first offset.
    ongoing: HashMap<i64, i64>,
    /// Aborted transactions, in marker (so `last_offset`) order.
    aborted: Vec<AbortedTxn>,
    /// Coordinator epoch of each producer's last marker.
    coordinator_epochs: HashMap<i64, i32>,
    /// Producers whose first transactional batch here awaits the
    /// coordinator's confirmation, with the batch's epoch (Kafka's
    /// VerificationGuard, KIP-890). A marker of the producer clears it, so a
    /// batch confirmed just before its transaction ended is not appended
    /// after the marker.
    verifying: HashMap<i64, i16>,
}

impl PartitionTxns {
    /// Takes an appended batch's header and the offset its first record got;
    /// starts a transaction for a transactional data batch of a producer
    /// with none ongoing. Other batches are ignored.
    pub fn on_data_batch(&mut self, h: &BatchHeader, first_offset: i64) {
        if h.producer_id < 0 || !h.is_transactional() || h.is_control() {
            return;
        }
        self.ongoing.entry(h.producer_id).or_insert(first_offset);
    }

    /// Takes the producer id, the marker's offset and its content; ends the
    /// producer's transaction and gives the [`AbortedTxn`] to index for an
    /// ABORT marker (None for COMMIT).
    pub fn on_marker(
        &mut self,
        producer_id: i64,
        marker_offset: i64,
        marker: ControlMarker,
    ) -> Option<AbortedTxn> {
        self.verifying.remove(&producer_id);
        let first_offset = self.ongoing.remove(&producer_id).unwrap_or(marker_offset);
        self.coordinator_epochs
            .insert(producer_id, marker.coordinator_epoch);
        if marker.commit {
            return None;
        }
        let last_stable_offset = self
            .first_unstable_offset()
            .map_or(marker_offset + 1, |o| o.min(marker_offset + 1));
        let a = AbortedTxn {
            producer_id,
            first_offset,
            last_offset: marker_offset,
            last_stable_offset,
        };
        self.aborted.push(a);
        Some(a)
    }

    /// Takes a marker's producer id and coordinator epoch; gives
    /// [`ProducerStateError::CoordinatorFenced`] (TRANSACTION_COORDINATOR_FENCED,
    /// 52) when an earlier marker of that producer came from a newer
    /// coordinator epoch (Kafka `ProducerAppendInfo.checkCoordinatorEpoch`).
    pub fn check_coordinator_epoch(
        &self,
        producer_id: i64,
        coordinator_epoch: i32,
    ) -> Result<(), ProducerStateError> {
        match self.coordinator_epochs.get(&producer_id) {
            Some(&latest) if latest > coordinator_epoch => {
                Err(ProducerStateError::CoordinatorFenced {
                    producer_id,
                    coordinator_epoch,
                    latest,
                })
            }
            _ => Ok(()),
        }
    }

    /// Notes that a transactional batch of (producer id, epoch) waits for the
    /// coordinator's confirmation (see `verifying`).
    pub fn begin_verification(&mut self, producer_id: i64, epoch: i16) {
        self.verifying.insert(producer_id, epoch);
    }

    /// Takes the confirmation noted by [`Self::begin_verification`]: true
    /// when it is still there for this epoch (no marker came in between).
    pub fn take_verification(&mut self, producer_id: i64, epoch: i16) -> bool {
        match self.verifying.get(&producer_id) {
            Some(e) if *e == epoch => {
                self.verifying.remove(&producer_id);
                true
            }
            _ => false,
        }
    }

    /// Restores one producer from a snapshot: its open transaction's first
    /// offset and its last marker's coordinator epoch.
    pub fn restore(
        &mut self,
        producer_id: i64,
        first_offset: Option<i64>,
        coordinator_epoch: Option<i32>,
    ) {
        if let Some(o) = first_offset {
            self.ongoing.insert(producer_id, o);
        }
        if let Some(e) = coordinator_epoch {
            self.coordinator_epochs.insert(producer_id, e);
        }
    }

    /// Sets the aborted transactions read from the `.txnindex` files (in
    /// marker order), before the log after a snapshot is replayed.
    pub fn set_aborted(&mut self, aborted: Vec<AbortedTxn>) {
        self.aborted = aborted;
    }

    /// Gives the smallest first offset of the ongoing transactions, if any
    /// (Kafka's first unstable offset before clamping to the log start).
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.ongoing.values().copied().min()
    }

    /// Takes the log start offset and the high watermark; gives the LSO:
    /// min(max(first unstable offset, log start offset), high watermark), or
    /// the high watermark when no transaction is ongoing.
    pub fn last_stable_offset(&self, log_start_offset: i64, high_watermark: i64) -> i64 {
        self.first_unstable_offset().map_or(high_watermark, |o| {
            o.max(log_start_offset).min(high_watermark)
        })
    }

    /// Gives the first offset of the producer's ongoing transaction, if any.
    pub fn ongoing_first_offset(&self, producer_id: i64) -> Option<i64> {
        self.ongoing.get(&producer_id).copied()
    }

    /// Gives whether the producer has an ongoing transaction.
    pub fn is_ongoing(&self, producer_id: i64) -> bool {
        self.ongoing.contains_key(&producer_id)
    }

    /// Gives the coordinator epoch of the producer's last marker, if any.
    pub fn coordinator_epoch(&self, producer_id: i64) -> Option<i32> {
        self.coordinator_epochs.get(&producer_id).copied()
    }

    /// Gives every aborted transaction kept, in marker order.
    pub fn aborted(&self) -> &[AbortedTxn] {
        &self.aborted
    }

    /// Takes a fetch offset and the end offset of the data fetched (exclusive;
    /// the LSO when nothing was returned); gives (producer id, first offset)
    /// of every aborted transaction that overlaps it — `last_offset >=
    /// fetch_offset` and `first_offset < upper` (Kafka
    /// `collectAbortedTransactions`) — sorted by first offset, for the
    /// READ_COMMITTED Fetch response's `aborted_transactions` (v4+).
    pub fn aborted_in_range(&self, fetch_offset: i64, upper: i64) -> Vec<(i64, i64)> {
        let from = self
            .aborted
            .partition_point(|a| a.last_offset < fetch_offset);
        let mut v: Vec<(i64, i64)> = self.aborted[from..]
            .iter()
            .filter(|a| a.first_offset < upper)
            .map(|a| (a.producer_id, a.first_offset))
            .collect();
        v.sort_by_key(|(pid, first)| (*first, *pid));
        v
    }

    /// Forgets aborted transactions whose marker is below the log start
    /// offset (retention, DeleteRecords). Gives how many were dropped.
    pub fn drop_aborted_before(&mut self, log_start_offset: i64) -> usize {
        let n = self
            .aborted
            .partition_point(|a| a.last_offset < log_start_offset);
        self.aborted.drain(..n);
        n
    }

    /// Number of ongoing transactions.
    pub fn ongoing_count(&self) -> usize {
        self.ongoing.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(pid: i64, txn: bool) -> BatchHeader {
        BatchHeader {
            base_offset: 0,
            batch_length: 100,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: if txn { 0x10 } else { 0 },
            last_offset_delta: 0,
            base_timestamp: 1,
            max_timestamp: 1,
            producer_id: pid,
            producer_epoch: 0,
            base_sequence: 0,
            records_count: 1,
        }
    }

    fn marker(commit: bool) -> ControlMarker {
        ControlMarker {
            commit,
            coordinator_epoch: 3,
        }
    }

    #[test]
    fn ongoing_commit_abort_and_lso() {
        let mut t = PartitionTxns::default();
        assert_eq!(t.last_stable_offset(0, 10), 10);
        t.on_data_batch(&data(1, false), 0); // not transactional
        t.on_data_batch(&data(7, true), 2);
        t.on_data_batch(&data(7, true), 4); // same txn, first offset stays
        t.on_data_batch(&data(8, true), 5);
        assert_eq!(t.ongoing_first_offset(7), Some(2));
        assert_eq!(t.last_stable_offset(0, 6), 2);
        // The log start offset clamps the LSO (Kafka updateFirstUnstableOffset).
        assert_eq!(t.last_stable_offset(3, 6), 3);
        assert_eq!(t.on_marker(7, 6, marker(true)), None);
        assert_eq!(t.last_stable_offset(0, 7), 5);
        assert_eq!(t.coordinator_epoch(7), Some(3));
        let a = t.on_marker(8, 7, marker(false)).unwrap();
        assert_eq!(
            a,
            AbortedTxn {
                producer_id: 8,
                first_offset: 5,
                last_offset: 7,
                last_stable_offset: 8
            }
        );
        assert_eq!(t.last_stable_offset(0, 8), 8);
        // An abort while another transaction is open: its LSO is that one's start.
        t.on_data_batch(&data(9, true), 8);
        t.on_data_batch(&data(10, true), 9);
        let a = t.on_marker(10, 10, marker(false)).unwrap();
        assert_eq!((a.first_offset, a.last_stable_offset), (9, 8));
        // A marker with no ongoing transaction: an empty one at the marker.
        let a = t.on_marker(11, 11, marker(false)).unwrap();
        assert_eq!((a.first_offset, a.last_offset), (11, 11));
        assert_eq!(t.ongoing_count(), 1);
        assert_eq!(
            t.check_coordinator_epoch(7, 2),
            Err(ProducerStateError::CoordinatorFenced {
                producer_id: 7,
                coordinator_epoch: 2,
                latest: 3
            })
        );
        assert_eq!(t.check_coordinator_epoch(7, 3), Ok(()));
        assert_eq!(t.check_coordinator_epoch(99, 0), Ok(()));
    }

    #[test]
    fn aborted_ranges() {
        let mut t = PartitionTxns::default();
        // pid 1: 0..=4 aborted at 4; pid 2: 2..=9 aborted at 9; pid 3: 10..=12.
        t.on_data_batch(&data(1, true), 0);
        t.on_data_batch(&data(2, true), 2);
        t.on_marker(1, 4, marker(false));
        t.on_marker(2, 9, marker(false));
        t.on_data_batch(&data(3, true), 10);
        t.on_marker(3, 12, marker(false));
        assert_eq!(t.aborted_in_range(0, 13), vec![(1, 0), (2, 2), (3, 10)]);
        assert_eq!(t.aborted_in_range(5, 13), vec![(2, 2), (3, 10)]);
        assert_eq!(t.aborted_in_range(5, 10), vec![(2, 2)]);
        assert_eq!(t.aborted_in_range(0, 2), vec![(1, 0)]);
        assert_eq!(t.aborted_in_range(13, 20), vec![]);
        assert_eq!(t.drop_aborted_before(5), 1);
        assert_eq!(t.aborted().len(), 2);
    }

    #[test]
    fn a_marker_cancels_a_pending_verification() {
        let mut t = PartitionTxns::default();
        t.begin_verification(7, 2);
        assert!(!t.take_verification(7, 1), "another epoch");
        assert!(t.take_verification(7, 2));
        assert!(!t.take_verification(7, 2), "taken once");
        t.begin_verification(7, 2);
        t.on_marker(7, 10, marker(false));
        assert!(
            !t.take_verification(7, 2),
            "the transaction ended meanwhile"
        );
    }
}
