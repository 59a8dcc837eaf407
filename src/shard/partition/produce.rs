//! The owner's Produce path for one partition ([`Partition::produce`]): the
//! leader check, batch validation, the one-batch rule, the transaction gate (KIP-890's check),
//! the idempotence check (KIP-98), the topic rules
//! (`partition/produce_rules.rs`) and stage 1 of the append.

use std::rc::Rc;

use bytes::Bytes;

use super::produce_rules::{self, Refused};
use super::{Appending, Partition};
use crate::cluster::leadership::Requester;
use crate::producer_state::{Check, ProducerStateError};
use crate::shard::error::ProduceError;
use crate::storage::{validate_batches, ValidatedBatch};

/// What [`Partition::produce`] did with one partition's records.
pub enum ProduceOutcome {
    /// Stage 1 done: offsets assigned, the write submitted. Await
    /// [`Appending::finish`] (after every partition of the request is
    /// reserved) for the offsets.
    Appending(Appending),
    /// A retry of a batch already appended (idempotent producer): answer
    /// with its offsets once [`Partition::wait_committed`] on `base_offset`
    /// resolves.
    Duplicate {
        /// Offset the original batch was given.
        base_offset: i64,
        /// The log start offset now.
        log_start_offset: i64,
    },
    /// Not appended: the batch would start a transaction on this partition,
    /// so the transaction coordinator must first confirm that the partition
    /// is in the producer's open transaction; then call again with
    /// `verified`.
    Verify {
        /// Producer id of the transactional batch.
        producer_id: i64,
        /// Its producer epoch.
        epoch: i16,
    },
    /// Refused: the error's Kafka code (`crate::error::KafkaCode`) and its
    /// text (Produce v8+ `error_message`) are the answer.
    Refused(ProduceError),
}

/// What the transaction rules say about one partition's batches.
pub(super) enum TxnGate {
    /// Not transactional, or continuing a verified open transaction.
    Pass,
    /// Refuse with this error.
    Reject(ProduceError),
    /// Ask the coordinator first.
    Verify(i64, i16),
}

impl Partition {
    /// The owner's Produce step for one partition. Takes the partition's
    /// `records` (a slice of the request frame), whether the request names a
    /// `transactional_id`, whether the transaction coordinator confirmed
    /// this partition is in the producer's open transaction (`verified`),
    /// acks=all (`acks_all`) and the broker time `now_ms` (ms). Refuses
    /// unless this broker leads the partition (NOT_LEADER_OR_FOLLOWER).
    /// Validates the batches against `max.message.bytes`, requires exactly one batch
    /// (INVALID_RECORD), applies the transaction gate, the idempotence check
    /// and the topic rules, then runs stage 1 of the append
    /// ([`Partition::append`]). Synchronous, so calls keep the order of
    /// offsets. Gives the [`ProduceOutcome`].
    pub fn produce(
        self: &Rc<Self>,
        records: &Bytes,
        has_transactional_id: bool,
        verified: bool,
        acks_all: bool,
        now_ms: i64,
    ) -> ProduceOutcome {
        // The image may have moved leadership away since the handler routed
        // the request: a follower never appends a client's records.
        if let Err(e) = self.check_access(Requester::Client, None) {
            log::debug!("rejecting produce to {}-{}: {e}", self.topic, self.index);
            return ProduceOutcome::Refused(ProduceError::Leadership(e));
        }
        let max = self.settings().max_message_bytes;
        let batches = match validate_batches(records, max) {
            Err(e) => {
                log::debug!("rejecting produce to {}-{}: {e}", self.topic, self.index);
                return ProduceOutcome::Refused(ProduceError::Batch(e));
            }
            Ok(b) => b,
        };
        let batch = match batches.as_slice() {
            [] => return ProduceOutcome::Refused(ProduceError::NoBatch),
            [b] => *b,
            // Kafka's rule for Produce v3+ (every version served here):
            // one RecordBatch per partition. It also keeps each batch
            // under the producer and transaction checks below.
            more => {
                return ProduceOutcome::Refused(ProduceError::TooManyBatches { count: more.len() })
            }
        };
        match self.txn_gate(&batches, has_transactional_id, verified) {
            TxnGate::Reject(e) => return ProduceOutcome::Refused(e),
            TxnGate::Verify(producer_id, epoch) => {
                return ProduceOutcome::Verify { producer_id, epoch }
            }
            TxnGate::Pass => {}
        }
        match self.check_producers(&batches) {
            Err(e) => {
                log::debug!("rejecting produce to {}-{}: {e}", self.topic, self.index);
                ProduceOutcome::Refused(ProduceError::Producer(e))
            }
            Ok(Check::Duplicate(meta)) => {
                // A retry of an appended batch: answer with its offsets.
                log::debug!(
                    "{}-{}: duplicate batch (sequence {}..{}) answered with offset {}",
                    self.topic,
                    self.index,
                    meta.first_seq,
                    meta.last_seq,
                    meta.first_offset
                );
                ProduceOutcome::Duplicate {
                    base_offset: meta.first_offset,
                    log_start_offset: self.log_start_offset(),
                }
            }
            Ok(Check::Append) => match self.prepare(records, &batch, acks_all, now_ms) {
                Err(e) => ProduceOutcome::Refused(e),
                Ok((records, batch)) => match self.append(&records, &[batch], now_ms) {
                    Ok(appending) => ProduceOutcome::Appending(appending),
                    Err(e) => {
                        log::error!("append to {}-{} failed: {e}", self.topic, self.index);
                        ProduceOutcome::Refused(ProduceError::Storage(e))
                    }
                },
            },
        }
    }

    /// The idempotence check for one partition's batches. The borrow ends
    /// here, before the append updates the state. Gives the check's verdict
    /// or the [`ProducerStateError`].
    pub(super) fn check_producers(
        &self,
        batches: &[ValidatedBatch],
    ) -> Result<Check, ProducerStateError> {
        let headers: Vec<_> = batches.iter().map(|b| b.header).collect();
        let state = self.producers.borrow();
        state.check(&headers)
    }

    /// The transaction rules for one partition's batches: takes whether the
    /// request names a `transactional_id` and whether the coordinator
    /// confirmed the partition; a batch that would start a transaction
    /// begins a verification and gives [`TxnGate::Verify`].
    pub(super) fn txn_gate(
        &self,
        batches: &[ValidatedBatch],
        has_transactional_id: bool,
        verified: bool,
    ) -> TxnGate {
        for b in batches {
            let h = &b.header;
            if !h.is_transactional() || h.producer_id < 0 {
                continue;
            }
            if !has_transactional_id {
                return TxnGate::Reject(ProduceError::TransactionalIdRequired {
                    producer_id: h.producer_id,
                });
            }
            // Continuing a transaction already open here at this epoch.
            let known_epoch = self.producers.borrow().get(h.producer_id).map(|e| e.epoch);
            // An epoch below the one this partition knows is fenced here,
            // before the coordinator is asked, as Kafka 4.4's leaders answer
            // it (INVALID_PRODUCER_EPOCH; e.g. the old producer id after an
            // epoch overflow rotated it, whose markers carry epoch 32767).
            if let Some(current_epoch) = known_epoch.filter(|e| *e > h.producer_epoch) {
                return TxnGate::Reject(ProduceError::Producer(ProducerStateError::FencedEpoch {
                    producer_id: h.producer_id,
                    epoch: h.producer_epoch,
                    current_epoch,
                }));
            }
            let same_epoch = known_epoch == Some(h.producer_epoch);
            let mut txns = self.txns.borrow_mut();
            if same_epoch && txns.is_ongoing(h.producer_id) {
                continue;
            }
            if verified {
                // Confirmed by the coordinator; still valid only if no marker
                // of this producer was written here meanwhile.
                if txns.take_verification(h.producer_id, h.producer_epoch) {
                    continue;
                }
                return TxnGate::Reject(ProduceError::VerificationLost {
                    producer_id: h.producer_id,
                    epoch: h.producer_epoch,
                });
            }
            txns.begin_verification(h.producer_id, h.producer_epoch);
            return TxnGate::Verify(h.producer_id, h.producer_epoch);
        }
        TxnGate::Pass
    }

    /// The topic's rules for one partition's batch (`produce_rules`) at
    /// `now_ms`: gives the bytes and batch to append, or the
    /// [`ProduceError`] (`NotEnoughReplicas` or `Batch`).
    fn prepare(
        &self,
        records: &Bytes,
        batch: &ValidatedBatch,
        acks_all: bool,
        now_ms: i64,
    ) -> Result<(Bytes, ValidatedBatch), ProduceError> {
        let isr = self.isr_size();
        match produce_rules::apply(&self.settings(), records, batch, now_ms, acks_all, isr) {
            Ok(prepared) => Ok(prepared),
            Err(Refused::NotEnoughReplicas { required, isr }) => {
                Err(ProduceError::NotEnoughReplicas {
                    required,
                    isr,
                    topic: self.topic.clone(),
                    partition: self.index,
                })
            }
            Err(Refused::Batch(e)) => {
                log::debug!("rejecting produce to {}-{}: {e}", self.topic, self.index);
                Err(ProduceError::Batch(e))
            }
        }
    }
}
