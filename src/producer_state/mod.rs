//! Per-partition producer state (KIP-98): for each producer id its epoch and
//! the sequence ranges and offsets of its last 5 batches (Kafka keeps 5,
//! matching `max.in.flight.requests.per.connection` ≤ 5 for idempotence).
//!
//! A batch from a known producer and epoch must continue the sequence
//! (OUT_OF_ORDER_SEQUENCE_NUMBER otherwise); a retry of one of the last 5
//! batches is a duplicate, answered with its original offsets and not
//! appended again; an older epoch is INVALID_PRODUCER_EPOCH; a new epoch must
//! start at sequence 0. A producer the partition does not know (new, or its
//! state expired after `producer.id.expiration.ms`) may start at any
//! sequence, as Kafka 2.5+ allows (KIP-360).
//!
//! At start-up the state comes from the newest producer-state snapshot
//! ([`snapshot`]) plus the batch headers after it, or from every batch
//! header of the log when there is none (the producer id, epoch and
//! sequences are in every header); see docs/producers.md.
//!
//! Below the shard: the partition (`shard::partition`) holds one of each;
//! the transaction coordinator (`txn`) is above it and only asks partitions
//! through their owner API.
//!
//! * [`partition_txns`]: the partition side of transactions: ongoing and
//!   aborted transactions and the last stable offset.
//! * [`snapshot`]: producer-state snapshot files in Kafka's format.

pub mod partition_txns;
pub mod snapshot;

use std::collections::{HashMap, VecDeque};

use crate::storage::BatchHeader;

/// Batches remembered per producer for duplicate detection.
pub const RETAINED_BATCHES: usize = 5;

/// One remembered batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchMeta {
    /// First sequence number.
    pub first_seq: i32,
    /// Last sequence number.
    pub last_seq: i32,
    /// Offset of the first record.
    pub first_offset: i64,
    /// Offset of the last record.
    pub last_offset: i64,
}

/// The state of one producer on one partition.
#[derive(Debug, Clone, Default)]
pub struct ProducerEntry {
    /// Current epoch.
    pub epoch: i16,
    /// Last batches, oldest first.
    pub batches: VecDeque<BatchMeta>,
    /// Largest batch timestamp seen (ms), for expiration.
    pub last_timestamp: i64,
}

/// What the state says about an incoming batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Check {
    /// Not idempotent, or the next batch in sequence: append it.
    Append,
    /// A retry of a batch already in the log at these offsets.
    Duplicate(BatchMeta),
}

/// Why the producer state refuses a batch (KIP-98). The Kafka code of each
/// variant is given by `crate::error::KafkaCode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProducerStateError {
    /// A batch of an idempotent producer (producer id ≥ 0) without a base
    /// sequence: INVALID_RECORD (87).
    #[error("batch of producer {producer_id} has no base sequence")]
    MissingSequence {
        /// The batch's producer id.
        producer_id: i64,
    },
    /// A batch (or marker) of an epoch older than the one the partition
    /// knows for the producer: INVALID_PRODUCER_EPOCH (47).
    #[error(
        "producer {producer_id} epoch {epoch} is older than its current epoch {current_epoch}"
    )]
    FencedEpoch {
        /// The producer id.
        producer_id: i64,
        /// The epoch of the batch.
        epoch: i16,
        /// The epoch the partition knows.
        current_epoch: i16,
    },
    /// A base sequence that does not continue the producer's sequence (a new
    /// epoch must start at 0): OUT_OF_ORDER_SEQUENCE_NUMBER (45).
    #[error("producer {producer_id} sent sequence {base_sequence}, expected {expected}")]
    OutOfOrderSequence {
        /// The producer id.
        producer_id: i64,
        /// The base sequence of the batch.
        base_sequence: i32,
        /// The sequence the partition expects.
        expected: i32,
    },
    /// A retry of an appended batch that is not the first batch of the
    /// request, so it cannot be answered with its offsets:
    /// DUPLICATE_SEQUENCE_NUMBER (46).
    #[error("producer {producer_id} sequences {first_seq}..={last_seq} are a duplicate")]
    DuplicateSequence {
        /// The producer id.
        producer_id: i64,
        /// First sequence of the batch.
        first_seq: i32,
        /// Last sequence of the batch.
        last_seq: i32,
    },
    /// A transaction marker from an older coordinator epoch than the
    /// producer's last marker (Kafka `ProducerAppendInfo.checkCoordinatorEpoch`):
    /// TRANSACTION_COORDINATOR_FENCED (52).
    #[error("marker of producer {producer_id} from coordinator epoch {coordinator_epoch}, older than {latest}")]
    CoordinatorFenced {
        /// The producer id.
        producer_id: i64,
        /// The marker's coordinator epoch.
        coordinator_epoch: i32,
        /// The coordinator epoch of the producer's last marker.
        latest: i32,
    },
}

fn next_seq(seq: i32) -> i32 {
    if seq == i32::MAX {
        0
    } else {
        seq + 1
    }
}

fn last_seq_of(h: &BatchHeader) -> i32 {
    // Sequences wrap at i32::MAX (Kafka's DefaultRecordBatch.incrementSequence).
    let last = h.base_sequence as i64 + h.last_offset_delta as i64;
    if last > i32::MAX as i64 {
        (last - i32::MAX as i64 - 1) as i32
    } else {
        last as i32
    }
}

/// Producer state of one partition.
#[derive(Debug, Default)]
pub struct ProducerStateMap {
    producers: HashMap<i64, ProducerEntry>,
}

impl ProducerStateMap {
    /// Number of producers tracked.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// True when no producer is tracked.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Every producer: (id, epoch, last sequence, last timestamp), by id.
    pub fn snapshot(&self) -> Vec<(i64, i16, i32, i64)> {
        let mut v: Vec<_> = self
            .producers
            .iter()
            .map(|(id, e)| {
                (
                    *id,
                    e.epoch,
                    e.batches.back().map(|b| b.last_seq).unwrap_or(-1),
                    e.last_timestamp,
                )
            })
            .collect();
        v.sort();
        v
    }

    /// Every producer and its entry, in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = (i64, &ProducerEntry)> {
        self.producers.iter().map(|(id, e)| (*id, e))
    }

    /// Sets a producer's entry (start-up from a producer-state snapshot).
    pub fn insert(&mut self, producer_id: i64, entry: ProducerEntry) {
        self.producers.insert(producer_id, entry);
    }

    /// The entry of a producer.
    pub fn get(&self, producer_id: i64) -> Option<&ProducerEntry> {
        self.producers.get(&producer_id)
    }

    /// Checks the batches of one produce request (in order) against the
    /// state. Gives `Check::Duplicate` when the first batch is a retry of a
    /// batch already appended, or the [`ProducerStateError`] (never
    /// `CoordinatorFenced`).
    pub fn check(&self, batches: &[BatchHeader]) -> Result<Check, ProducerStateError> {
        let mut shadow: HashMap<i64, ProducerEntry> = HashMap::new();
        for (i, h) in batches.iter().enumerate() {
            if h.producer_id < 0 {
                continue;
            }
            if h.base_sequence < 0 {
                return Err(ProducerStateError::MissingSequence {
                    producer_id: h.producer_id,
                });
            }
            let entry = shadow
                .get(&h.producer_id)
                .or_else(|| self.producers.get(&h.producer_id));
            let Some(e) = entry else {
                // Unknown producer: any first sequence (KIP-360).
                shadow.insert(
                    h.producer_id,
                    ProducerEntry {
                        epoch: h.producer_epoch,
                        batches: VecDeque::from([BatchMeta {
                            first_seq: h.base_sequence,
                            last_seq: last_seq_of(h),
                            first_offset: -1,
                            last_offset: -1,
                        }]),
                        last_timestamp: h.max_timestamp,
                    },
                );
                continue;
            };
            if h.producer_epoch < e.epoch {
                return Err(ProducerStateError::FencedEpoch {
                    producer_id: h.producer_id,
                    epoch: h.producer_epoch,
                    current_epoch: e.epoch,
                });
            }
            let last = last_seq_of(h);
            if h.producer_epoch > e.epoch {
                if h.base_sequence != 0 {
                    return Err(ProducerStateError::OutOfOrderSequence {
                        producer_id: h.producer_id,
                        base_sequence: h.base_sequence,
                        expected: 0,
                    });
                }
            } else {
                if let Some(dup) = e
                    .batches
                    .iter()
                    .find(|b| b.first_seq == h.base_sequence && b.last_seq == last)
                {
                    if i == 0 && dup.first_offset >= 0 {
                        return Ok(Check::Duplicate(*dup));
                    }
                    return Err(ProducerStateError::DuplicateSequence {
                        producer_id: h.producer_id,
                        first_seq: h.base_sequence,
                        last_seq: last,
                    });
                }
                if let Some(prev) = e.batches.back() {
                    let expected = next_seq(prev.last_seq);
                    if h.base_sequence != expected {
                        return Err(ProducerStateError::OutOfOrderSequence {
                            producer_id: h.producer_id,
                            base_sequence: h.base_sequence,
                            expected,
                        });
                    }
                }
            }
            let mut next = e.clone();
            next.epoch = h.producer_epoch;
            next.batches.push_back(BatchMeta {
                first_seq: h.base_sequence,
                last_seq: last,
                first_offset: -1,
                last_offset: -1,
            });
            shadow.insert(h.producer_id, next);
        }
        Ok(Check::Append)
    }

    /// Records an appended batch (its header with the offsets it got).
    pub fn update(&mut self, h: &BatchHeader, first_offset: i64) {
        if h.producer_id < 0 || h.is_control() {
            return;
        }
        let e = self.producers.entry(h.producer_id).or_default();
        if h.producer_epoch != e.epoch {
            e.batches.clear();
            e.epoch = h.producer_epoch;
        }
        e.batches.push_back(BatchMeta {
            first_seq: h.base_sequence,
            last_seq: last_seq_of(h),
            first_offset,
            last_offset: first_offset + h.last_offset_delta as i64,
        });
        while e.batches.len() > RETAINED_BATCHES {
            e.batches.pop_front();
        }
        e.last_timestamp = e.last_timestamp.max(h.max_timestamp);
    }

    /// Records an appended transaction marker (control batch header, KIP-98):
    /// the producer's epoch becomes the marker's epoch when that is newer
    /// (its sequence history then resets, so the next batch of that epoch
    /// may start anywhere and batches of an older epoch get
    /// INVALID_PRODUCER_EPOCH); an unknown producer is added with no batches.
    /// Non-control or non-producer batches are ignored.
    pub fn apply_marker(&mut self, h: &BatchHeader) {
        if h.producer_id < 0 || !h.is_control() {
            return;
        }
        let e = self
            .producers
            .entry(h.producer_id)
            .or_insert_with(|| ProducerEntry {
                epoch: h.producer_epoch,
                batches: VecDeque::new(),
                last_timestamp: h.max_timestamp,
            });
        if h.producer_epoch > e.epoch {
            e.batches.clear();
            e.epoch = h.producer_epoch;
        }
        e.last_timestamp = e.last_timestamp.max(h.max_timestamp);
    }

    /// Forgets producers idle for longer than `expiration_ms`
    /// (`producer.id.expiration.ms`). Gives how many were removed.
    pub fn expire(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        self.expire_except(now_ms, expiration_ms, |_| false)
    }

    /// As [`Self::expire`], keeping the producers for which `keep` (given the
    /// producer id) is true, e.g. those with an ongoing transaction (Kafka
    /// never expires those).
    pub fn expire_except(
        &mut self,
        now_ms: i64,
        expiration_ms: i64,
        keep: impl Fn(i64) -> bool,
    ) -> usize {
        let before = self.producers.len();
        self.producers
            .retain(|id, e| keep(*id) || now_ms.saturating_sub(e.last_timestamp) <= expiration_ms);
        before - self.producers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(pid: i64, epoch: i16, seq: i32, count: i32) -> BatchHeader {
        BatchHeader {
            base_offset: 0,
            batch_length: 100,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: count - 1,
            base_timestamp: 1,
            max_timestamp: 1,
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: seq,
            records_count: count,
        }
    }

    #[test]
    fn sequences_duplicates_and_epochs() {
        let mut m = ProducerStateMap::default();
        let b0 = header(7, 0, 0, 3);
        assert_eq!(m.check(&[b0]), Ok(Check::Append));
        m.update(&b0, 100);
        // retry of the same batch → duplicate with its offsets
        assert_eq!(
            m.check(&[b0]),
            Ok(Check::Duplicate(BatchMeta {
                first_seq: 0,
                last_seq: 2,
                first_offset: 100,
                last_offset: 102
            }))
        );
        // gap → out of order
        assert_eq!(
            m.check(&[header(7, 0, 5, 1)]),
            Err(ProducerStateError::OutOfOrderSequence {
                producer_id: 7,
                base_sequence: 5,
                expected: 3
            })
        );
        // next in sequence
        let b1 = header(7, 0, 3, 2);
        assert_eq!(m.check(&[b1]), Ok(Check::Append));
        m.update(&b1, 103);
        // a newer epoch must restart at 0; then the older epoch is fenced
        assert_eq!(
            m.check(&[header(7, 1, 5, 1)]),
            Err(ProducerStateError::OutOfOrderSequence {
                producer_id: 7,
                base_sequence: 5,
                expected: 0
            })
        );
        let e1 = header(7, 1, 0, 1);
        assert_eq!(m.check(&[e1]), Ok(Check::Append));
        m.update(&e1, 105);
        assert_eq!(
            m.check(&[header(7, 0, 5, 1)]),
            Err(ProducerStateError::FencedEpoch {
                producer_id: 7,
                epoch: 0,
                current_epoch: 1
            })
        );
        // unknown producer may start anywhere; two batches in one request chain
        assert_eq!(
            m.check(&[header(9, 0, 40, 2), header(9, 0, 42, 1)]),
            Ok(Check::Append)
        );
        assert_eq!(
            m.check(&[header(9, 0, 40, 2), header(9, 0, 43, 1)]),
            Err(ProducerStateError::OutOfOrderSequence {
                producer_id: 9,
                base_sequence: 43,
                expected: 42
            })
        );
        // non-idempotent batches are not checked
        assert_eq!(m.check(&[header(-1, -1, -1, 1)]), Ok(Check::Append));
        // only the last 5 batches are remembered
        for i in 0..6 {
            let h = header(8, 0, i, 1);
            m.update(&h, 200 + i as i64);
        }
        assert_eq!(m.get(8).map(|e| e.batches.len()), Some(RETAINED_BATCHES));
        assert_eq!(m.expire(10_000, 1_000), 2);
        assert!(m.is_empty());
    }

    #[test]
    fn sequence_wraps() {
        let mut m = ProducerStateMap::default();
        let h = header(1, 0, i32::MAX - 1, 2);
        m.update(&h, 0);
        assert_eq!(m.check(&[header(1, 0, 0, 1)]), Ok(Check::Append));
    }
}
