//! The transaction coordinator's decisions, without I/O: Kafka's
//! transaction state machine (KIP-98) as pure functions. Each takes the
//! request, the transactional id's current [`TxnMetadata`] (`None` when the
//! id is unknown), the time `now` (ms since the epoch) and the settings, and
//! gives either a [`TxnError`] (the answer) or what to do: the
//! [`Transition`] to append to `__transaction_state` (the new
//! `TxnLogValue`), the [`Markers`] to write, and the reply.
//! `txn::coordinator` applies these decisions (busy mark, appends,
//! cross-shard markers, timers).
//!
//! States: Empty → Ongoing (partitions added) → PrepareCommit /
//! PrepareAbort (EndTxn, a fencing InitProducerId or the transaction
//! timeout) → CompleteCommit / CompleteAbort (every marker written) →
//! Ongoing again on the next AddPartitionsToTxn; InitProducerId moves Empty
//! and Complete states to Empty with a bumped epoch. Dead and
//! PrepareEpochFence are Kafka's in-flight states: this coordinator never
//! writes them, and only meets them in a log written elsewhere.
//!
//! Transactions v2 (KIP-890 part 2) is chosen per request, as Kafka does
//! ([`TxnVersion`]): its EndTxn ([`end_txn_v2`]) bumps the epoch at every
//! end and rotates the producer id once the epoch is exhausted; its adds
//! come from the partition leaders and record the client's version.

use std::collections::BTreeSet;

use super::error::{TxnError, TxnOperation};
use super::records::{TxnLogTagged, TxnLogValue, TxnStatus, TxnVersion};
use super::TxnConfig;

/// The highest producer epoch InitProducerId hands out before rotating to a
/// new producer id (Kafka's `isEpochExhausted`: `Short.MaxValue - 1`), so a
/// fencing abort can always bump once more.
pub const MAX_HANDED_OUT_EPOCH: i16 = i16::MAX - 1;

/// One transactional id's metadata (what `__transaction_state` holds, plus
/// the epoch a fence replaced).
#[derive(Debug, Clone, PartialEq)]
pub struct TxnMetadata {
    /// The persisted fields.
    pub value: TxnLogValue,
    /// The epoch before a timeout abort or a fencing InitProducerId bumped
    /// it (-1 when none), so the fenced producer may still re-initialise
    /// with it (KIP-360, KIP-588).
    pub last_epoch: i16,
}

/// A new state of a transactional id: `value` is appended to
/// `__transaction_state`, then both fields become its metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// The record value to append.
    pub value: TxnLogValue,
    /// The in-memory `last_epoch` after the transition.
    pub last_epoch: i16,
}

impl Transition {
    /// The metadata after the transition.
    pub fn metadata(&self) -> TxnMetadata {
        TxnMetadata {
            value: self.value.clone(),
            last_epoch: self.last_epoch,
        }
    }
}

/// COMMIT or ABORT control markers to write, with this producer id and
/// epoch, to every partition of a transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Markers {
    /// Producer id of the transaction.
    pub producer_id: i64,
    /// Producer epoch written in the markers (bumped when fencing).
    pub producer_epoch: i16,
    /// COMMIT (`true`) or ABORT.
    pub commit: bool,
    /// The partitions of the transaction.
    pub partitions: BTreeSet<(String, i32)>,
}

/// How a transaction ends: persist `prepare` (the decision), write
/// `markers`, then persist [`complete`]`(&prepare, now)`.
#[derive(Debug, Clone, PartialEq)]
pub struct EndPlan {
    /// PrepareCommit / PrepareAbort.
    pub prepare: Transition,
    /// The markers of the decision.
    pub markers: Markers,
}

/// InitProducerId for a transactional id, as the client sends it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InitRequest {
    /// The producer's `transaction.timeout.ms`.
    pub timeout_ms: i32,
    /// The (producer id, epoch) the client holds (v3+, KIP-360); `None`
    /// when it passes (-1, -1).
    pub current: Option<(i64, i16)>,
}

impl InitRequest {
    /// The request from the wire fields: a negative producer id means none.
    pub fn new(timeout_ms: i32, producer_id: i64, epoch: i16) -> InitRequest {
        InitRequest {
            timeout_ms,
            current: (producer_id >= 0).then_some((producer_id, epoch)),
        }
    }
}

/// What an InitProducerId does next.
#[derive(Debug, Clone, PartialEq)]
pub enum InitDecision {
    /// Append this Empty state; the reply is its producer id and epoch.
    Persist(Transition),
    /// A new transactional id, or the epoch is exhausted: allocate a
    /// producer id, then append [`with_new_producer_id`]'s state.
    NewProducerId,
    /// A transaction is open: end it with this abort (its epoch bumped,
    /// fencing the old producer), then decide again with no
    /// `current` pair (it was checked).
    AbortOngoing(EndPlan),
}

/// What an EndTxn does next.
#[derive(Debug, Clone, PartialEq)]
pub enum EndDecision {
    /// A retry of the EndTxn that completed the last transaction: answer
    /// success with this (producer id, epoch) (EndTxn v5 returns them),
    /// write nothing.
    AlreadyDone {
        /// The id's producer id.
        producer_id: i64,
        /// The id's producer epoch.
        producer_epoch: i16,
    },
    /// End the open transaction. The answer (EndTxn v5) is the producer id
    /// and epoch of [`complete`]`(&plan.prepare, …)`.
    End(EndPlan),
    /// Transactions v2 with an exhausted epoch: allocate a producer id, then
    /// decide again passing it as `next_producer_id` (Kafka allocates it
    /// before writing the Prepare state).
    NewProducerId,
}

/// A transaction as DescribeTransactions / ListTransactions show it.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnDescription {
    /// Transactional id.
    pub transactional_id: String,
    /// The error answered for this id (TRANSACTIONAL_ID_NOT_FOUND for an
    /// unknown one), `None` on success.
    pub error: Option<TxnError>,
    /// State name (`Ongoing`, `CompleteCommit`, …), empty on error.
    pub state: &'static str,
    /// Producer id (-1 on error).
    pub producer_id: i64,
    /// Producer epoch (-1 on error).
    pub producer_epoch: i16,
    /// `transaction.timeout.ms` (0 on error).
    pub timeout_ms: i32,
    /// Start of the current transaction (ms since the epoch), -1 when none.
    pub start_ms: i64,
    /// Partitions in the current transaction.
    pub partitions: BTreeSet<(String, i32)>,
}

/// The Empty state of a fresh producer id at epoch 0 (InitProducerId of a
/// new transactional id, or after the epoch is exhausted).
pub fn with_new_producer_id(producer_id: i64, req: &InitRequest, now: i64) -> Transition {
    Transition {
        value: empty_value(producer_id, 0, req.timeout_ms, now),
        last_epoch: -1,
    }
}

fn empty_value(producer_id: i64, epoch: i16, timeout_ms: i32, now: i64) -> TxnLogValue {
    TxnLogValue {
        producer_id,
        producer_epoch: epoch,
        timeout_ms,
        status: TxnStatus::Empty,
        partitions: BTreeSet::new(),
        last_update_ms: now,
        start_ms: -1,
        tagged: TxnLogTagged::default(),
    }
}

/// INVALID_TRANSACTION_TIMEOUT unless the producer's `transaction.timeout.ms`
/// is in 1..=`transaction.max.timeout.ms`.
pub fn check_timeout(req: &InitRequest, cfg: &TxnConfig) -> Result<(), TxnError> {
    if req.timeout_ms <= 0 || req.timeout_ms > cfg.max_timeout_ms {
        return Err(TxnError::InvalidTransactionTimeout {
            timeout_ms: req.timeout_ms,
            max_timeout_ms: cfg.max_timeout_ms,
        });
    }
    Ok(())
}

/// InitProducerId with a transactional id. Errors: INVALID_TRANSACTION_TIMEOUT
/// (`timeout_ms` not in 1..=`transaction.max.timeout.ms`), PRODUCER_FENCED
/// (a `current` pair that is neither the id's producer id with its epoch nor
/// the epoch a fence replaced, KIP-360), CONCURRENT_TRANSACTIONS (markers
/// being written). A known id gets its epoch bumped, or a new producer id at
/// epoch 0 once the epoch reaches [`MAX_HANDED_OUT_EPOCH`].
pub fn init_producer_id(
    m: Option<&TxnMetadata>,
    req: &InitRequest,
    now: i64,
    cfg: &TxnConfig,
) -> Result<InitDecision, TxnError> {
    check_timeout(req, cfg)?;
    let Some(m) = m else {
        // Kafka accepts any `current` pair for a new id (its metadata has no
        // epoch yet).
        return Ok(InitDecision::NewProducerId);
    };
    if let Some((producer_id, epoch)) = req.current {
        let v = &m.value;
        let matches =
            producer_id == v.producer_id && (epoch == v.producer_epoch || epoch == m.last_epoch);
        if !matches {
            return Err(TxnError::ProducerFenced {
                producer_id,
                epoch,
                current_epoch: v.producer_epoch,
            });
        }
    }
    match m.value.status {
        TxnStatus::PrepareCommit | TxnStatus::PrepareAbort => {
            Err(TxnError::ConcurrentTransactions {
                state: Some(m.value.status),
            })
        }
        // Kafka never keeps this state (it is written as PrepareAbort);
        // read as the abort it stands for.
        TxnStatus::PrepareEpochFence => Err(TxnError::ConcurrentTransactions {
            state: Some(m.value.status),
        }),
        TxnStatus::Ongoing => {
            // Epochs handed out stop at MAX_HANDED_OUT_EPOCH, so the fence
            // can always bump; the next decision then rotates the id.
            let fence = m.value.producer_epoch.saturating_add(1);
            Ok(InitDecision::AbortOngoing(end_plan(m, fence, false, now)))
        }
        // Dead is Kafka's state of an id being expired, which this
        // coordinator removes at once; an id read in that state starts
        // over like a completed one.
        TxnStatus::Empty
        | TxnStatus::CompleteCommit
        | TxnStatus::CompleteAbort
        | TxnStatus::Dead => {
            if m.value.producer_epoch >= MAX_HANDED_OUT_EPOCH {
                return Ok(InitDecision::NewProducerId);
            }
            let mut value = empty_value(
                m.value.producer_id,
                m.value.producer_epoch + 1,
                req.timeout_ms,
                now,
            );
            // The client's version and the previous producer id stay.
            value.tagged = TxnLogTagged {
                next_producer_id: -1,
                ..m.value.tagged
            };
            Ok(InitDecision::Persist(Transition {
                value,
                last_epoch: -1,
            }))
        }
    }
}

/// Checks that (producer id, epoch) is the id's current producer: errors
/// with INVALID_PRODUCER_ID_MAPPING (unknown id or another producer id) or
/// PRODUCER_FENCED (another epoch).
pub fn check_producer(
    m: Option<&TxnMetadata>,
    producer_id: i64,
    epoch: i16,
) -> Result<&TxnMetadata, TxnError> {
    let Some(m) = m else {
        return Err(TxnError::InvalidProducerIdMapping {
            producer_id,
            current: None,
        });
    };
    if m.value.producer_id != producer_id {
        return Err(TxnError::InvalidProducerIdMapping {
            producer_id,
            current: Some(m.value.producer_id),
        });
    }
    if m.value.producer_epoch != epoch {
        return Err(TxnError::ProducerFenced {
            producer_id,
            epoch,
            current_epoch: m.value.producer_epoch,
        });
    }
    Ok(m)
}

/// AddPartitionsToTxn / AddOffsetsToTxn (and, for transactions v2, a
/// partition leader's implicit add for Produce v12+ / TxnOffsetCommit v5+):
/// adds `partitions` to the open transaction, opening one (start time
/// `now`) in Empty and the Complete states; the state records the client's
/// transaction version `tv`. Gives the Ongoing state to append, or `None`
/// when every partition is already in the open transaction. Errors: those
/// of [`check_producer`], CONCURRENT_TRANSACTIONS in the Prepare states,
/// INVALID_TXN_STATE in Dead.
pub fn add_partitions(
    m: Option<&TxnMetadata>,
    producer_id: i64,
    epoch: i16,
    partitions: &[(String, i32)],
    tv: TxnVersion,
    now: i64,
) -> Result<Option<Transition>, TxnError> {
    let m = check_producer(m, producer_id, epoch)?;
    let mut value = m.value.clone();
    value.tagged.client_tv = tv;
    if tv.bumps_epoch() {
        mark_previous(&mut value);
    }
    match value.status {
        TxnStatus::PrepareCommit | TxnStatus::PrepareAbort | TxnStatus::PrepareEpochFence => {
            return Err(TxnError::ConcurrentTransactions {
                state: Some(value.status),
            });
        }
        TxnStatus::Dead => {
            return Err(TxnError::InvalidTxnState {
                operation: TxnOperation::AddPartitions,
                state: value.status,
            });
        }
        TxnStatus::Ongoing => {
            if partitions.iter().all(|p| value.partitions.contains(p)) {
                return Ok(None);
            }
        }
        TxnStatus::Empty | TxnStatus::CompleteCommit | TxnStatus::CompleteAbort => {
            value.partitions.clear();
            value.start_ms = now;
            value.status = TxnStatus::Ongoing;
        }
    }
    value.partitions.extend(partitions.iter().cloned());
    value.last_update_ms = now;
    Ok(Some(Transition {
        value,
        last_epoch: m.last_epoch,
    }))
}

/// Whether `partition` is in the open transaction of this producer id and
/// epoch (Produce and TxnOffsetCommit before writing, AddPartitionsToTxn
/// v4+ `verify_only`; KIP-890). Errors, as Kafka 4.4's coordinator answers a
/// verification: INVALID_PRODUCER_ID_MAPPING (unknown id or another producer
/// id), INVALID_PRODUCER_EPOCH (another epoch), CONCURRENT_TRANSACTIONS (the
/// transaction is being decided: PrepareCommit / PrepareAbort),
/// TRANSACTION_ABORTABLE (no open transaction, or the partition is not in
/// it; a partition leader answers older clients INVALID_TXN_STATE instead,
/// `crate::error::produce_verification_code`).
pub fn verify_partition(
    m: Option<&TxnMetadata>,
    producer_id: i64,
    epoch: i16,
    partition: &(String, i32),
) -> Result<(), TxnError> {
    let m = match check_producer(m, producer_id, epoch) {
        Ok(m) => m,
        Err(TxnError::ProducerFenced {
            producer_id,
            epoch,
            current_epoch,
        }) => {
            return Err(TxnError::InvalidProducerEpoch {
                producer_id,
                epoch,
                current_epoch,
            })
        }
        Err(e) => return Err(e),
    };
    let not_in_txn = TxnError::TransactionAbortable {
        state: m.value.status,
    };
    match m.value.status {
        TxnStatus::Ongoing if m.value.partitions.contains(partition) => Ok(()),
        TxnStatus::Ongoing => Err(not_in_txn),
        TxnStatus::PrepareCommit | TxnStatus::PrepareAbort => {
            Err(TxnError::ConcurrentTransactions {
                state: Some(m.value.status),
            })
        }
        // The producer's writes belong before its EndTxn: once the
        // transaction is decided, or when none is open, nothing may join.
        TxnStatus::Empty
        | TxnStatus::CompleteCommit
        | TxnStatus::CompleteAbort
        | TxnStatus::Dead
        | TxnStatus::PrepareEpochFence => Err(not_in_txn),
    }
}

/// EndTxn: commit (`commit`) or abort the open transaction, with the
/// client's transaction version `tv` ([`TxnVersion::for_end_txn`]).
/// `next_producer_id` is the id allocated after an
/// [`EndDecision::NewProducerId`] (transactions v2 only), `None` otherwise.
///
/// Transactions v1 errors: those of [`check_producer`];
/// CONCURRENT_TRANSACTIONS for the same outcome while its markers are
/// written; INVALID_TXN_STATE for no open transaction, the other outcome of
/// a decided transaction, or Kafka's in-flight states. Transactions v2: see
/// [`end_txn_v2`].
pub fn end_txn(
    m: Option<&TxnMetadata>,
    producer_id: i64,
    epoch: i16,
    commit: bool,
    tv: TxnVersion,
    next_producer_id: Option<i64>,
    now: i64,
) -> Result<EndDecision, TxnError> {
    if tv.bumps_epoch() {
        return end_txn_v2(m, producer_id, epoch, commit, next_producer_id, now);
    }
    let m = check_producer(m, producer_id, epoch)?;
    let status = m.value.status;
    let invalid = TxnError::InvalidTxnState {
        operation: if commit {
            TxnOperation::Commit
        } else {
            TxnOperation::Abort
        },
        state: status,
    };
    let concurrent = TxnError::ConcurrentTransactions {
        state: Some(status),
    };
    let done = EndDecision::AlreadyDone {
        producer_id: m.value.producer_id,
        producer_epoch: m.value.producer_epoch,
    };
    match status {
        TxnStatus::Ongoing => {
            let mut plan = end_plan(m, epoch, commit, now);
            plan.prepare.value.tagged.client_tv = tv;
            Ok(EndDecision::End(plan))
        }
        TxnStatus::CompleteCommit if commit => Ok(done),
        TxnStatus::CompleteCommit => Err(invalid),
        TxnStatus::CompleteAbort if !commit => Ok(done),
        TxnStatus::CompleteAbort => Err(invalid),
        TxnStatus::PrepareCommit if commit => Err(concurrent),
        TxnStatus::PrepareCommit => Err(invalid),
        TxnStatus::PrepareAbort if !commit => Err(concurrent),
        TxnStatus::PrepareAbort => Err(invalid),
        TxnStatus::Empty => Err(invalid),
        // Kafka treats these as states no id may be found in; this
        // coordinator answers them like Empty.
        TxnStatus::Dead | TxnStatus::PrepareEpochFence => Err(invalid),
    }
}

/// EndTxn of transactions v2 (KIP-890 part 2, EndTxn v5), as Kafka 4.4's
/// coordinator decides it. Every accepted EndTxn writes its Prepare state
/// with the epoch + 1 (the markers carry it) and the answer is the bumped
/// pair; an epoch already at [`MAX_HANDED_OUT_EPOCH`] first needs a new
/// producer id ([`EndDecision::NewProducerId`]), which the Complete state
/// switches to at epoch 0.
///
/// Retries are told apart by epoch, not by state: a request one epoch below
/// the id's (`retryOnEpochBump`) or with the previous producer id at the
/// exhausted epoch while the id is at epoch 0 (the overflow retry) is a
/// retry of the last EndTxn. Errors: INVALID_PRODUCER_ID_MAPPING (unknown
/// id, another producer id that is not the overflow retry); PRODUCER_FENCED
/// (Ongoing and Empty need the exact epoch, the Prepare states a retry, the
/// Complete states a retry or the exact epoch); CONCURRENT_TRANSACTIONS for
/// a retry of the same outcome while its markers are written;
/// INVALID_TXN_STATE for a commit with nothing open, a retry of the other
/// outcome, or Kafka's in-flight states. An abort from Empty or a Complete
/// state (not a retry) is a new, empty transaction aborted at once (its
/// start time `now`).
pub fn end_txn_v2(
    m: Option<&TxnMetadata>,
    producer_id: i64,
    epoch: i16,
    commit: bool,
    next_producer_id: Option<i64>,
    now: i64,
) -> Result<EndDecision, TxnError> {
    let Some(m) = m else {
        return Err(TxnError::InvalidProducerIdMapping {
            producer_id,
            current: None,
        });
    };
    let v = &m.value;
    let retry_on_overflow = v.tagged.previous_producer_id == producer_id
        && epoch == MAX_HANDED_OUT_EPOCH
        && v.producer_epoch == 0;
    let retry_on_bump = i32::from(v.producer_epoch) == i32::from(epoch) + 1;
    if v.producer_id != producer_id && !retry_on_overflow {
        return Err(TxnError::InvalidProducerIdMapping {
            producer_id,
            current: Some(v.producer_id),
        });
    }
    let status = v.status;
    let valid_epoch = match status {
        TxnStatus::Ongoing | TxnStatus::Empty | TxnStatus::Dead | TxnStatus::PrepareEpochFence => {
            epoch == v.producer_epoch
        }
        TxnStatus::PrepareCommit | TxnStatus::PrepareAbort => retry_on_bump,
        TxnStatus::CompleteCommit | TxnStatus::CompleteAbort => {
            retry_on_bump || retry_on_overflow || epoch == v.producer_epoch
        }
    };
    if !valid_epoch {
        return Err(TxnError::ProducerFenced {
            producer_id,
            epoch,
            current_epoch: v.producer_epoch,
        });
    }
    let retry = retry_on_bump || retry_on_overflow;
    let invalid = TxnError::InvalidTxnState {
        operation: if commit {
            TxnOperation::Commit
        } else {
            TxnOperation::Abort
        },
        state: status,
    };
    let concurrent = TxnError::ConcurrentTransactions {
        state: Some(status),
    };
    let done = EndDecision::AlreadyDone {
        producer_id: v.producer_id,
        producer_epoch: v.producer_epoch,
    };
    let end = |no_partition_added: bool| {
        if v.producer_epoch >= MAX_HANDED_OUT_EPOCH && next_producer_id.is_none() {
            return Ok(EndDecision::NewProducerId);
        }
        Ok(EndDecision::End(end_plan_v2(
            m,
            commit,
            next_producer_id,
            no_partition_added,
            now,
        )))
    };
    match status {
        TxnStatus::Ongoing => end(false),
        TxnStatus::CompleteCommit if commit && retry => Ok(done),
        TxnStatus::CompleteCommit if commit || retry => Err(invalid),
        TxnStatus::CompleteCommit => end(true),
        TxnStatus::CompleteAbort if commit => Err(invalid),
        TxnStatus::CompleteAbort if retry => Ok(done),
        TxnStatus::CompleteAbort => end(true),
        TxnStatus::PrepareCommit if commit => Err(concurrent),
        TxnStatus::PrepareCommit => Err(invalid),
        TxnStatus::PrepareAbort if !commit => Err(concurrent),
        TxnStatus::PrepareAbort => Err(invalid),
        TxnStatus::Empty if commit => Err(invalid),
        TxnStatus::Empty => end(true),
        // Kafka's coordinator never keeps an id in these states; answered
        // like a commit from Empty.
        TxnStatus::Dead | TxnStatus::PrepareEpochFence => Err(invalid),
    }
}

/// Kafka's transactions-v2 records carry PreviousProducerId = the producer
/// id itself until a rotation sets the old one; an unset one is filled so.
fn mark_previous(value: &mut TxnLogValue) {
    if value.tagged.previous_producer_id < 0 {
        value.tagged.previous_producer_id = value.producer_id;
    }
}

/// The Prepare state of a transactions-v2 EndTxn: epoch + 1 (the old one
/// kept as `last_epoch`), `next_producer_id` recorded when the epoch is
/// exhausted, the start time `now` for a transaction with no partition
/// (Kafka's `noPartitionAdded`).
fn end_plan_v2(
    m: &TxnMetadata,
    commit: bool,
    next_producer_id: Option<i64>,
    no_partition_added: bool,
    now: i64,
) -> EndPlan {
    let mut plan = end_plan(m, m.value.producer_epoch.saturating_add(1), commit, now);
    let value = &mut plan.prepare.value;
    value.tagged.client_tv = TxnVersion::Tv2;
    mark_previous(value);
    value.tagged.next_producer_id = next_producer_id.unwrap_or(-1);
    if no_partition_added {
        value.start_ms = now;
    }
    plan
}

/// Ends the open transaction of `m` with producer epoch `epoch` (one above
/// the producer's when fencing it): the Prepare state and its markers.
pub fn end_plan(m: &TxnMetadata, epoch: i16, commit: bool, now: i64) -> EndPlan {
    let last_epoch = if epoch != m.value.producer_epoch {
        m.value.producer_epoch
    } else {
        m.last_epoch
    };
    let value = TxnLogValue {
        producer_epoch: epoch,
        status: if commit {
            TxnStatus::PrepareCommit
        } else {
            TxnStatus::PrepareAbort
        },
        last_update_ms: now,
        ..m.value.clone()
    };
    EndPlan {
        markers: Markers {
            producer_id: value.producer_id,
            producer_epoch: value.producer_epoch,
            commit,
            partitions: value.partitions.clone(),
        },
        prepare: Transition { value, last_epoch },
    }
}

/// The markers still owed by a transaction found in a Prepare state (after
/// a restart, or a failed marker write); `None` in the other states.
/// PrepareEpochFence is read as the abort it stands for.
pub fn pending_markers(value: &TxnLogValue) -> Option<Markers> {
    let commit = match value.status {
        TxnStatus::PrepareCommit => true,
        TxnStatus::PrepareAbort | TxnStatus::PrepareEpochFence => false,
        TxnStatus::Empty
        | TxnStatus::Ongoing
        | TxnStatus::CompleteCommit
        | TxnStatus::CompleteAbort
        | TxnStatus::Dead => return None,
    };
    Some(Markers {
        producer_id: value.producer_id,
        producer_epoch: value.producer_epoch,
        commit,
        partitions: value.partitions.clone(),
    })
}

/// The Complete state after every marker of `prepare` is written: no
/// partitions, the start time kept (DescribeTransactions shows it after the
/// end, as Kafka does). A transactions-v2 Prepare state with a
/// NextProducerId switches to that id at epoch 0, the old id kept as
/// PreviousProducerId (so a retried EndTxn of the old id is recognised).
pub fn complete(prepare: &Transition, commit: bool, now: i64) -> Transition {
    let p = &prepare.value;
    let rotate = p.tagged.client_tv.bumps_epoch() && p.tagged.next_producer_id >= 0;
    let (producer_id, producer_epoch, previous_producer_id) = if rotate {
        (p.tagged.next_producer_id, 0, p.producer_id)
    } else {
        (
            p.producer_id,
            p.producer_epoch,
            p.tagged.previous_producer_id,
        )
    };
    Transition {
        value: TxnLogValue {
            producer_id,
            producer_epoch,
            status: if commit {
                TxnStatus::CompleteCommit
            } else {
                TxnStatus::CompleteAbort
            },
            partitions: BTreeSet::new(),
            last_update_ms: now,
            tagged: TxnLogTagged {
                previous_producer_id,
                next_producer_id: -1,
                ..p.tagged
            },
            ..p.clone()
        },
        last_epoch: prepare.last_epoch,
    }
}

/// Whether the id is still in the Prepare state `prepare` wrote (same
/// producer id, epoch and status), so its Complete state may follow.
pub fn still_prepared(current: Option<&TxnMetadata>, prepare: &TxnLogValue) -> bool {
    current.is_some_and(|m| {
        m.value.producer_id == prepare.producer_id
            && m.value.producer_epoch == prepare.producer_epoch
            && m.value.status == prepare.status
    })
}

/// The transaction-timeout abort: an Ongoing transaction open for longer
/// than its `transaction.timeout.ms` at `now` is aborted with its epoch
/// bumped, fencing the producer (Kafka's behaviour). `None` in every other
/// case.
pub fn timeout_abort(m: &TxnMetadata, now: i64) -> Option<EndPlan> {
    match m.value.status {
        TxnStatus::Ongoing => {
            let deadline = m.value.start_ms.saturating_add(m.value.timeout_ms as i64);
            (m.value.start_ms >= 0 && now > deadline)
                .then(|| end_plan(m, m.value.producer_epoch.saturating_add(1), false, now))
        }
        TxnStatus::Empty
        | TxnStatus::PrepareCommit
        | TxnStatus::PrepareAbort
        | TxnStatus::CompleteCommit
        | TxnStatus::CompleteAbort
        | TxnStatus::Dead
        | TxnStatus::PrepareEpochFence => None,
    }
}

/// Whether the id expired at `now`: no transaction open or being ended,
/// and no change for longer than `transactional.id.expiration.ms`. An
/// expired id is removed with a tombstone.
pub fn expired(m: &TxnMetadata, now: i64, cfg: &TxnConfig) -> bool {
    match m.value.status {
        TxnStatus::Empty | TxnStatus::CompleteCommit | TxnStatus::CompleteAbort => {
            now.saturating_sub(m.value.last_update_ms) > cfg.id_expiration_ms
        }
        TxnStatus::Ongoing
        | TxnStatus::PrepareCommit
        | TxnStatus::PrepareAbort
        | TxnStatus::Dead
        | TxnStatus::PrepareEpochFence => false,
    }
}

/// DescribeTransactions of one id: TRANSACTIONAL_ID_NOT_FOUND for an
/// unknown id and for one in state Dead (being expired), as Kafka answers.
pub fn describe(transactional_id: &str, m: Option<&TxnMetadata>) -> TxnDescription {
    let Some(m) = m else {
        return describe_error(transactional_id, TxnError::TransactionalIdNotFound);
    };
    match m.value.status {
        TxnStatus::Dead => describe_error(transactional_id, TxnError::TransactionalIdNotFound),
        TxnStatus::Empty
        | TxnStatus::Ongoing
        | TxnStatus::PrepareCommit
        | TxnStatus::PrepareAbort
        | TxnStatus::CompleteCommit
        | TxnStatus::CompleteAbort
        | TxnStatus::PrepareEpochFence => summary(transactional_id, m),
    }
}

/// The description of a known id in whatever state (ListTransactions shows
/// every state, Dead included).
pub fn summary(transactional_id: &str, m: &TxnMetadata) -> TxnDescription {
    TxnDescription {
        transactional_id: transactional_id.to_string(),
        error: None,
        state: m.value.status.name(),
        producer_id: m.value.producer_id,
        producer_epoch: m.value.producer_epoch,
        timeout_ms: m.value.timeout_ms,
        start_ms: m.value.start_ms,
        partitions: m.value.partitions.clone(),
    }
}

/// The description of an id answered with `error` (no state, producer id
/// and epoch -1).
pub fn describe_error(transactional_id: &str, error: TxnError) -> TxnDescription {
    TxnDescription {
        transactional_id: transactional_id.to_string(),
        error: Some(error),
        state: "",
        producer_id: -1,
        producer_epoch: -1,
        timeout_ms: 0,
        start_ms: -1,
        partitions: BTreeSet::new(),
    }
}

/// ListTransactions' filter: the state is in `states` (any when empty), the
/// producer id in `producer_ids` (any when empty) and, when
/// `min_duration_ms` ≥ 0, the transaction has been open at least that long
/// at `now` (v1, KIP-994).
pub fn list_matches(
    m: &TxnMetadata,
    states: &[String],
    producer_ids: &[i64],
    min_duration_ms: i64,
    now: i64,
) -> bool {
    (states.is_empty() || states.iter().any(|s| s == m.value.status.name()))
        && (producer_ids.is_empty() || producer_ids.contains(&m.value.producer_id))
        && (min_duration_ms < 0
            || (m.value.start_ms >= 0 && now - m.value.start_ms >= min_duration_ms))
}

#[cfg(test)]
#[path = "state_machine_tests.rs"]
mod tests;
