//! Partition leaders' adds (transactions v2, KIP-890 part 2) joined per
//! transactional id: the owners of one Produce v12's partitions on several
//! shards (and a TxnOffsetCommit v5's group shard) each ask the coordinator
//! to add their partitions at the same moment. Instead of one
//! `__transaction_state` append per owner, each waiting for the id to be
//! free, the adds for one id queue on the coordinator's shard and one writer
//! per id appends them in batches (group commit): the adds that arrive
//! while a batch is written make the next batch, one record holding the
//! union of their partitions, and every add of a batch is answered with
//! that append's result.
//!
//! The state machine decides each add of a batch in arrival order
//! ([`join`]): an add with a wrong producer id or epoch gets its own error
//! and adds nothing, the others join. While another operation holds the id
//! (InitProducerId, EndTxn, a client's AddPartitionsToTxn, the markers of a
//! Prepare state) an add waits for it up to
//! [`super::coordinator::LEADER_ADD_RETRY_MS`] (Kafka's
//! `add.partitions.to.txn.retry.backoff.max.ms` default), checking every
//! 2 ms, then answers CONCURRENT_TRANSACTIONS, which clients retry.
//!
//! Everything here is the coordinator shard's own state (no locks across
//! cores), as the rest of the coordinator.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_channel::oneshot;

use super::coordinator::{acquire, here, ready, transition, Busy, LEADER_ADD_RETRY_MS};
use super::error::TxnError;
use super::records::TxnVersion;
use super::state_machine::{self as sm, Transition, TxnMetadata};
use super::TransactionCoordinator;
use crate::shard::{now_ms, Shard};

/// How often an add waiting for another operation on its id checks again
/// (ms).
const RECHECK_MS: u64 = 2;

/// One partition leader's add: the producer it names and its partitions.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaderAdd {
    /// The producer id the leader saw in the batch.
    pub producer_id: i64,
    /// The producer epoch the leader saw in the batch.
    pub epoch: i16,
    /// The partitions to add (topic, partition).
    pub partitions: Vec<(String, i32)>,
}

/// How an add of a batch is answered when the state machine accepts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joined {
    /// Its partitions were all in the open transaction before the batch:
    /// answered at once, whatever the append gives.
    AlreadyIn,
    /// Its partitions are in the batch's record: answered with the append's
    /// result.
    InWrite,
}

/// Decides a batch of adds for one transactional id whose metadata is `m`
/// (`None` when unknown), in arrival order: each is
/// [`sm::add_partitions`] (transactions v2) on the state the adds before it
/// leave, so the record to append (`Some` when any partition is new) holds
/// the union of the accepted adds' partitions. Each add gets its own
/// answer: [`Joined`], or its error (INVALID_PRODUCER_ID_MAPPING,
/// PRODUCER_FENCED, CONCURRENT_TRANSACTIONS in a Prepare state,
/// INVALID_TXN_STATE in Dead), which leaves the others unchanged.
pub fn join(
    m: Option<&TxnMetadata>,
    adds: &[LeaderAdd],
    now: i64,
) -> (Option<Transition>, Vec<Result<Joined, TxnError>>) {
    let mut state = m.cloned();
    let mut write: Option<Transition> = None;
    let verdicts = adds
        .iter()
        .map(|a| {
            let decided = sm::add_partitions(
                state.as_ref(),
                a.producer_id,
                a.epoch,
                &a.partitions,
                TxnVersion::Tv2,
                now,
            )?;
            Ok(match decided {
                None if write.is_none() => Joined::AlreadyIn,
                None => Joined::InWrite,
                Some(t) => {
                    state = Some(t.metadata());
                    write = Some(t);
                    Joined::InWrite
                }
            })
        })
        .collect();
    (write, verdicts)
}

/// An add waiting for its batch.
struct Waiter {
    add: LeaderAdd,
    /// When it stops waiting for another operation on the id.
    deadline: Instant,
    answer: oneshot::Sender<Result<(), TxnError>>,
}

impl Waiter {
    fn answer(self, r: Result<(), TxnError>) {
        // The caller may be gone (its connection closed); nothing to tell.
        let _ = self.answer.send(r);
    }
}

/// The leader adds of one coordinator shard.
#[derive(Default)]
pub(super) struct LeaderAdds {
    /// Per transactional id with a writer running: the adds waiting for its
    /// next batch (the id is removed when its writer stops).
    queued: RefCell<HashMap<String, Vec<Waiter>>>,
    /// Ids whose writers wait before taking a batch (fault injection for
    /// tests: [`TransactionCoordinator::hold_leader_adds`]).
    held: RefCell<HashSet<String>>,
}

impl LeaderAdds {
    /// Queues `w` for `id`; true when no writer runs for `id` (the caller
    /// starts one).
    fn enqueue(&self, id: &str, w: Waiter) -> bool {
        let mut queued = self.queued.borrow_mut();
        match queued.get_mut(id) {
            Some(q) => {
                q.push(w);
                false
            }
            None => {
                queued.insert(id.to_string(), vec![w]);
                true
            }
        }
    }

    /// The adds queued for `id`, leaving its writer registered.
    fn take(&self, id: &str) -> Vec<Waiter> {
        self.queued
            .borrow_mut()
            .get_mut(id)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Puts `w` back at the end of `id`'s queue.
    fn requeue(&self, id: &str, w: Waiter) {
        self.queued
            .borrow_mut()
            .entry(id.to_string())
            .or_default()
            .push(w);
    }

    /// Answers `error` to the adds of `id` whose deadline passed at `now`.
    fn expire(&self, id: &str, now: Instant, error: &TxnError) {
        let expired: Vec<Waiter> = match self.queued.borrow_mut().get_mut(id) {
            Some(q) => {
                let (gone, kept) = std::mem::take(q)
                    .into_iter()
                    .partition(|w| w.deadline <= now);
                *q = kept;
                gone
            }
            None => Vec::new(),
        };
        for w in expired {
            w.answer(Err(error.clone()));
        }
    }

    /// Unregisters `id`'s writer if nothing is queued for it; true then.
    fn stop_if_idle(&self, id: &str) -> bool {
        let mut queued = self.queued.borrow_mut();
        if queued.get(id).is_some_and(|q| !q.is_empty()) {
            return false;
        }
        queued.remove(id);
        true
    }

    /// Answers `error` to every add queued for `id` and unregisters its
    /// writer.
    fn fail_all(&self, id: &str, error: &TxnError) {
        let waiting = self.queued.borrow_mut().remove(id).unwrap_or_default();
        for w in waiting {
            w.answer(Err(error.clone()));
        }
    }
}

impl TransactionCoordinator {
    /// How many partition leaders' adds for `id` wait for its next
    /// `__transaction_state` append on this shard.
    pub fn queued_leader_adds(&self, id: &str) -> usize {
        self.adds.queued.borrow().get(id).map_or(0, Vec::len)
    }

    /// Fault injection for tests that drive a broker in their own process:
    /// the leader adds of `id` queue on this shard without being written
    /// until [`TransactionCoordinator::release_leader_adds`], so a test can
    /// join adds from several shards without relying on timing.
    pub fn hold_leader_adds(&self, id: &str) {
        self.adds.held.borrow_mut().insert(id.to_string());
    }

    /// Ends [`TransactionCoordinator::hold_leader_adds`] for `id`.
    pub fn release_leader_adds(&self, id: &str) {
        self.adds.held.borrow_mut().remove(id);
    }
}

/// Adds `partitions` to the open transaction of `id` for a partition
/// leader, joined with the other leaders' adds for `id` (see the module
/// documentation). Errors: COORDINATOR_LOAD_IN_PROGRESS while the id's
/// partition loads, this add's [`join`] error, the append's
/// ([`TxnError::StateAppend`], [`TxnError::StatePartitionNotHere`]), or
/// CONCURRENT_TRANSACTIONS once it waited
/// [`LEADER_ADD_RETRY_MS`] for another operation on the id.
pub(super) async fn add(
    shard: Rc<Shard>,
    id: String,
    producer_id: i64,
    epoch: i16,
    partitions: Vec<(String, i32)>,
) -> Result<(), TxnError> {
    let txns = ready(&shard, &id)?;
    let (answer, answered) = oneshot::channel();
    let waiter = Waiter {
        add: LeaderAdd {
            producer_id,
            epoch,
            partitions,
        },
        deadline: Instant::now() + Duration::from_millis(LEADER_ADD_RETRY_MS),
        answer,
    };
    if txns.adds.enqueue(&id, waiter) {
        crate::stall::spawn_local("txn leader adds", write_batches(shard, id)).detach();
    }
    // A writer that stopped without answering (the shard shutting down):
    // the client retries.
    answered
        .await
        .unwrap_or(Err(TxnError::ConcurrentTransactions { state: None }))
}

/// The writer of `id`'s leader adds: takes the busy mark, decides the
/// queued adds as one batch, appends its record, answers, and again while
/// adds are queued.
async fn write_batches(shard: Rc<Shard>, id: String) {
    let txns = here();
    loop {
        let Some(busy) = wait_for_id(&shard, &txns, &id).await else {
            return;
        };
        while txns.adds.held.borrow().contains(&id) {
            glommio::timer::sleep(Duration::from_millis(1)).await;
        }
        let batch = txns.adds.take(&id);
        let adds: Vec<LeaderAdd> = batch.iter().map(|w| w.add.clone()).collect();
        let (write, verdicts) = join(txns.get(&id).as_ref(), &adds, now_ms());
        let mut in_write = Vec::new();
        let mut waiting = false;
        let now = Instant::now();
        for (w, verdict) in batch.into_iter().zip(verdicts) {
            match verdict {
                Ok(Joined::AlreadyIn) => w.answer(Ok(())),
                Ok(Joined::InWrite) => in_write.push(w),
                // A Prepare state: its markers are being written.
                Err(TxnError::ConcurrentTransactions { .. }) if now < w.deadline => {
                    txns.adds.requeue(&id, w);
                    waiting = true;
                }
                Err(e) => w.answer(Err(e)),
            }
        }
        let written = match write {
            Some(t) => transition(&shard, &id, &t).await,
            None => Ok(()),
        };
        for w in in_write {
            w.answer(written.clone());
        }
        drop(busy);
        if waiting {
            glommio::timer::sleep(Duration::from_millis(RECHECK_MS)).await;
        }
    }
}

/// Waits until `id` is free and marks it busy for the writer. None when
/// nothing is left to write (the writer is unregistered): every add was
/// answered, CONCURRENT_TRANSACTIONS once past its deadline while another
/// operation held the id, or the busy mark's other error
/// (COORDINATOR_LOAD_IN_PROGRESS). An add is never expired for waiting on
/// this writer's own appends.
async fn wait_for_id(shard: &Shard, txns: &TransactionCoordinator, id: &str) -> Option<Busy> {
    loop {
        if txns.adds.stop_if_idle(id) {
            return None;
        }
        match acquire(shard, id) {
            Ok(b) => return Some(b),
            Err(e @ TxnError::ConcurrentTransactions { .. }) => {
                txns.adds.expire(id, Instant::now(), &e);
                if txns.adds.stop_if_idle(id) {
                    return None;
                }
                glommio::timer::sleep(Duration::from_millis(RECHECK_MS)).await;
            }
            Err(e) => {
                txns.adds.fail_all(id, &e);
                return None;
            }
        }
    }
}

#[cfg(test)]
#[path = "leader_add_tests.rs"]
mod tests;
