//! The owner's Produce path for one partition ([`Partition::produce`]): batch
//! validation, the one-batch rule, the transaction gate (KIP-890's check),
//! the idempotence check (KIP-98), the topic rules
//! (`handlers::produce_rules`) and stage 1 of the append.

use std::rc::Rc;

use bytes::Bytes;
use kafka_protocol::ResponseError as E;

use super::{Appending, Partition};
use crate::error::{codes, KafkaCode};
use crate::handlers::produce_rules::{self, Refused};
use crate::storage::{validate_batches, ValidatedBatch};
use crate::txn::producer_state::Check;

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
    /// Refused with this Kafka error code and message for the client.
    Refused {
        /// Kafka error code.
        error_code: i16,
        /// Error text (Produce v8+ `error_message`).
        message: String,
    },
}

impl ProduceOutcome {
    fn refused(error_code: i16, message: impl Into<String>) -> ProduceOutcome {
        ProduceOutcome::Refused {
            error_code,
            message: message.into(),
        }
    }
}

/// What the transaction rules say about one partition's batches.
pub(super) enum TxnGate {
    /// Not transactional, or continuing a verified open transaction.
    Pass,
    /// Refuse with this Kafka error code.
    Reject(i16, &'static str),
    /// Ask the coordinator first.
    Verify(i64, i16),
}

impl Partition {
    /// The owner's Produce step for one partition. Takes the partition's
    /// `records` (a slice of the request frame), whether the request names a
    /// `transactional_id`, whether the transaction coordinator confirmed
    /// this partition is in the producer's open transaction (`verified`),
    /// acks=all (`acks_all`) and the broker time `now_ms` (ms). Validates the
    /// batches against `max.message.bytes`, requires exactly one batch
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
        let max = self.settings().max_message_bytes;
        let batches = match validate_batches(records, max) {
            Err(e) => {
                log::debug!("rejecting produce to {}-{}: {e}", self.topic, self.index);
                return ProduceOutcome::refused(e.code(), e.to_string());
            }
            Ok(b) => b,
        };
        if batches.is_empty() {
            return ProduceOutcome::refused(
                codes::CORRUPT_MESSAGE,
                "no record batch in the request",
            );
        }
        if batches.len() > 1 {
            // Kafka's rule for Produce v3+ (every version served here):
            // one RecordBatch per partition. It also keeps each batch
            // under the producer and transaction checks below.
            return ProduceOutcome::refused(
                E::InvalidRecord.code(),
                format!(
                    "a partition's records must be exactly one record batch, got {}",
                    batches.len()
                ),
            );
        }
        match self.txn_gate(&batches, has_transactional_id, verified) {
            TxnGate::Reject(code, why) => return ProduceOutcome::refused(code, why),
            TxnGate::Verify(producer_id, epoch) => {
                return ProduceOutcome::Verify { producer_id, epoch }
            }
            TxnGate::Pass => {}
        }
        match self.check_producers(&batches) {
            Err(code) => {
                ProduceOutcome::refused(code, "rejected by the idempotent producer checks (KIP-98)")
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
            Ok(Check::Append) => match self.prepare(records, &batches, acks_all, now_ms) {
                Err((code, why)) => ProduceOutcome::refused(code, why),
                Ok((records, batches)) => match self.append(&records, &batches, now_ms) {
                    Ok(appending) => ProduceOutcome::Appending(appending),
                    Err(e) => {
                        log::error!("append to {}-{} failed: {e}", self.topic, self.index);
                        ProduceOutcome::refused(e.code(), e.to_string())
                    }
                },
            },
        }
    }

    /// The idempotence check for one partition's batches. The borrow ends
    /// here, before the append updates the state. Gives the check's verdict
    /// or the Kafka error code.
    pub(super) fn check_producers(&self, batches: &[ValidatedBatch]) -> Result<Check, i16> {
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
                return TxnGate::Reject(
                    E::TransactionalIdAuthorizationFailed.code(),
                    "transactional batches need the request's transactional_id",
                );
            }
            // Continuing a transaction already open here at this epoch.
            let same_epoch = self
                .producers
                .borrow()
                .get(h.producer_id)
                .is_some_and(|e| e.epoch == h.producer_epoch);
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
                return TxnGate::Reject(
                    E::InvalidTxnState.code(),
                    "the transaction ended while the batch was being verified",
                );
            }
            txns.begin_verification(h.producer_id, h.producer_epoch);
            return TxnGate::Verify(h.producer_id, h.producer_epoch);
        }
        TxnGate::Pass
    }

    /// The topic's rules for one partition's batch (`produce_rules`) at
    /// `now_ms`: gives the bytes and batch to append, or the Kafka error
    /// code and message.
    fn prepare(
        &self,
        records: &Bytes,
        batches: &[ValidatedBatch],
        acks_all: bool,
        now_ms: i64,
    ) -> Result<(Bytes, Vec<ValidatedBatch>), (i16, String)> {
        let Some(batch) = batches.first() else {
            return Err((codes::CORRUPT_MESSAGE, "no record batch".into()));
        };
        match produce_rules::apply(&self.settings(), records, batch, now_ms, acks_all) {
            Ok((bytes, b)) => Ok((bytes, vec![b])),
            Err(Refused::NotEnoughReplicas { required }) => Err((
                E::NotEnoughReplicas.code(),
                format!(
                    "The size of the current ISR 1 is insufficient to satisfy the min.isr requirement of {required} for partition {}-{}",
                    self.topic, self.index
                ),
            )),
            Err(Refused::Batch(e)) => {
                log::debug!("rejecting produce to {}-{}: {e}", self.topic, self.index);
                Err((e.code(), e.to_string()))
            }
        }
    }
}
