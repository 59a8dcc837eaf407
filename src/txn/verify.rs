//! Whether partitions are in a producer's open transaction, as the
//! partition owners ask it before a transaction's first batch on a
//! partition (KIP-890's check): [`CoordinatorVerifier`], installed on every
//! shard at start-up, asks the coordinator's shard on this broker in one
//! cross-shard call, or the coordinator's broker in one AddPartitionsToTxn
//! (v4, `verify_only`) request, for all the partitions at once.

use std::rc::Rc;
use std::sync::Arc;

use crate::cluster::error::CoordinatorLookupError;
use crate::shard::error::{TxnRefusal, VerificationError};
use crate::shard::owner::produce::{LocalFuture, TxnVerifier};
use crate::shard::remote::RemoteError;
use crate::shard::Shard;

use super::error::TxnError;
use super::TRANSACTION_STATE_TOPIC;

/// The shard coordinating `transactional_id`: the owner of its
/// `__transaction_state` partition. Errors with
/// [`CoordinatorLookupError::TopicMissing`] (COORDINATOR_NOT_AVAILABLE) while
/// that topic does not exist yet (FindCoordinator creates it), and
/// [`CoordinatorLookupError::NotCoordinator`] (NOT_COORDINATOR, naming the
/// leader) when another broker leads the partition.
pub fn txn_owner(shard: &Shard, transactional_id: &str) -> Result<usize, CoordinatorLookupError> {
    let image = shard.metadata();
    if image.topic(TRANSACTION_STATE_TOPIC).is_none() {
        return Err(CoordinatorLookupError::TopicMissing {
            topic: TRANSACTION_STATE_TOPIC,
        });
    }
    let n = shard.config.txn.state_log_partitions;
    let p = super::coordinator::partition_for_transactional_id(transactional_id, n);
    crate::cluster::leadership::coordinator_here(
        &image,
        shard.config.node_id,
        TRANSACTION_STATE_TOPIC,
        p,
    )?;
    Ok(shard.owner(TRANSACTION_STATE_TOPIC, p))
}

/// The transaction coordinator as the owners' [`TxnVerifier`].
#[derive(Debug, Default)]
pub struct CoordinatorVerifier;

impl CoordinatorVerifier {
    /// Installs it on `shard` (start-up, every shard).
    pub fn install(shard: &Shard) {
        shard.set_txn_verifier(Rc::new(CoordinatorVerifier));
    }
}

impl TxnVerifier for CoordinatorVerifier {
    fn verify(
        &self,
        shard: Rc<Shard>,
        transactional_id: Arc<str>,
        producer_id: i64,
        epoch: i16,
        partitions: Vec<(Arc<str>, i32)>,
        add: bool,
    ) -> LocalFuture<Vec<Result<(), VerificationError>>> {
        Box::pin(verify_partitions(
            shard,
            transactional_id,
            producer_id,
            epoch,
            partitions,
            add,
        ))
    }
}

/// Asks the coordinator of `id` whether each of `partitions` is in the open
/// transaction of (`producer_id`, `epoch`) or, with `add` (transactions
/// v2), adds them all to it (one answer for all, recorded with client
/// transaction version 2); one result per partition, in order. One
/// cross-shard call or one request to another broker (AddPartitionsToTxn
/// v4, `verify_only` = `!add`, as Kafka's partition leaders send it).
pub async fn verify_partitions(
    shard: Rc<Shard>,
    id: Arc<str>,
    producer_id: i64,
    epoch: i16,
    partitions: Vec<(Arc<str>, i32)>,
    add: bool,
) -> Vec<Result<(), VerificationError>> {
    let n = partitions.len();
    let all = |e: VerificationError| vec![Err(e); n];
    match txn_owner(&shard, &id) {
        Ok(owner) if add => shard
            .invoke_on(owner, move |s| async move {
                let wanted = partitions
                    .iter()
                    .map(|(t, p)| (t.to_string(), *p))
                    .collect();
                let verdict = super::coordinator::add_partitions_for_leader(
                    s,
                    id.to_string(),
                    producer_id,
                    epoch,
                    wanted,
                )
                .await
                .map_err(|e| VerificationError::Coordinator(refusal(&e)));
                vec![verdict; n]
            })
            .await
            .unwrap_or_else(|e| all(VerificationError::Unanswered(e))),
        Ok(owner) => shard
            .invoke_on(owner, move |s| async move {
                partitions
                    .iter()
                    .map(|(t, p)| {
                        super::coordinator::verify_partition(
                            &s,
                            &id,
                            producer_id,
                            epoch,
                            &(t.to_string(), *p),
                        )
                        .map_err(|e| VerificationError::Coordinator(refusal(&e)))
                    })
                    .collect()
            })
            .await
            .unwrap_or_else(|e| all(VerificationError::Unanswered(e))),
        // The coordinator is another broker: ask it, as Kafka's partition
        // leaders do.
        Err(CoordinatorLookupError::NotCoordinator { leader, .. }) if leader >= 0 => {
            let Some(remote) = shard.remote() else {
                return all(VerificationError::Remote(RemoteError::NotInstalled));
            };
            let asked = partitions.clone();
            match remote
                .verify_in_txn(
                    shard,
                    leader,
                    id.clone(),
                    producer_id,
                    epoch,
                    partitions,
                    add,
                )
                .await
            {
                Ok(codes) => asked
                    .into_iter()
                    .zip(codes.into_iter().map(Some).chain(std::iter::repeat(None)))
                    .map(|((topic, partition), code)| match code {
                        Some(0) => Ok(()),
                        Some(code) => Err(VerificationError::Remote(RemoteError::Refused {
                            broker: leader,
                            topic: topic.to_string(),
                            partition,
                            code,
                        })),
                        None => Err(VerificationError::NoVerifier),
                    })
                    .collect(),
                Err(e) => {
                    log::info!("verifying {n} partitions of {id} with coordinator {leader}: {e}");
                    all(VerificationError::Remote(e))
                }
            }
        }
        Err(e) => all(VerificationError::CoordinatorLookup(e)),
    }
}

/// The coordinator's error as the partition owner takes it: its
/// [`TxnRefusal`] with the same Kafka code. The errors the verification
/// itself gives (`state_machine::verify_partition`, the load) keep their
/// meaning; an error of another operation, which a verification does not
/// give, is COORDINATOR_NOT_AVAILABLE (the client retries).
pub fn refusal(e: &TxnError) -> TxnRefusal {
    match e {
        TxnError::InvalidProducerIdMapping { .. } => TxnRefusal::InvalidProducerIdMapping,
        TxnError::InvalidProducerEpoch { .. } | TxnError::ProducerFenced { .. } => {
            TxnRefusal::InvalidProducerEpoch
        }
        TxnError::InvalidTxnState { .. } => TxnRefusal::InvalidTxnState,
        TxnError::TransactionAbortable { .. } => TxnRefusal::TransactionAbortable,
        TxnError::ConcurrentTransactions { .. } => TxnRefusal::ConcurrentTransactions,
        TxnError::CoordinatorLoadInProgress => TxnRefusal::CoordinatorLoadInProgress,
        TxnError::NotCoordinator => TxnRefusal::NotCoordinator,
        TxnError::InvalidTransactionTimeout { .. }
        | TxnError::TransactionalIdNotFound
        | TxnError::UnknownTopicOrPartition { .. }
        | TxnError::OperationNotAttempted
        | TxnError::StatePartitionNotHere { .. }
        | TxnError::CoordinatorUnavailable(_)
        | TxnError::ProducerIdAllocation { .. }
        | TxnError::StateAppend { .. }
        | TxnError::MarkerWrite { .. } => TxnRefusal::CoordinatorNotAvailable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::error::TxnOperation;
    use crate::txn::records::TxnStatus;

    /// What the verification gives keeps its meaning for the owner.
    #[test]
    fn verification_errors_keep_their_meaning() {
        let cases = [
            (
                TxnError::InvalidProducerIdMapping {
                    producer_id: 1,
                    current: None,
                },
                TxnRefusal::InvalidProducerIdMapping,
            ),
            (
                TxnError::InvalidProducerEpoch {
                    producer_id: 1,
                    epoch: 0,
                    current_epoch: 1,
                },
                TxnRefusal::InvalidProducerEpoch,
            ),
            (
                TxnError::InvalidTxnState {
                    operation: TxnOperation::VerifyPartition,
                    state: TxnStatus::Empty,
                },
                TxnRefusal::InvalidTxnState,
            ),
            (
                TxnError::CoordinatorLoadInProgress,
                TxnRefusal::CoordinatorLoadInProgress,
            ),
            (TxnError::NotCoordinator, TxnRefusal::NotCoordinator),
        ];
        for (e, r) in cases {
            assert_eq!(refusal(&e), r, "{e:?}");
        }
    }
}
