//! Idempotent and transactional producers (KIP-98).
//!
//! * [`producer_ids`]: producer id blocks, persisted so ids are never reused.
//! * [`producer_state`]: per-partition producer state that drops retried
//!   duplicates and rejects sequence gaps.
//! * [`partition_txns`]: the partition side of transactions: ongoing and
//!   aborted transactions and the last stable offset.
//! * [`snapshot`]: producer-state snapshot files in Kafka's format.
//! * [`records`]: `__transaction_state` records in Kafka's schemas
//!   (TransactionLogKey / TransactionLogValue v0).
//! * [`coordinator`]: the transaction coordinator of every `transactional.id`
//!   whose `__transaction_state` partition this shard owns: applies the
//!   state machine's decisions (busy marks, appends, control markers over
//!   the cross-core channels, timeouts, recovery).
//! * [`state_machine`]: Kafka's transaction state machine as pure functions
//!   (request, metadata, time → transition, markers, answer).
//! * [`load`]: the replay of a `__transaction_state` partition.
//! * [`error`]: [`error::TxnError`], the coordinator's typed error.

pub mod coordinator;
pub mod error;
pub mod load;
pub mod partition_txns;
pub mod producer_ids;
pub mod producer_state;
pub mod records;
pub mod snapshot;
pub mod state_machine;

pub use coordinator::TransactionCoordinator;

/// The internal topic holding transaction metadata.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

/// Transaction coordinator settings, with Kafka's names and defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnConfig {
    /// `transaction.state.log.num.partitions` (default 50).
    pub state_log_partitions: i32,
    /// `transaction.state.log.segment.bytes` (default 104857600).
    pub state_log_segment_bytes: u64,
    /// `transaction.max.timeout.ms`: the largest `transaction.timeout.ms` a
    /// producer may ask for (default 900000); larger gets
    /// INVALID_TRANSACTION_TIMEOUT.
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`: a transactional id with no
    /// transaction for this long is forgotten (default 604800000 = 7 days).
    pub id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`: how
    /// often ongoing transactions past their timeout are aborted (default
    /// 10000).
    pub abort_timed_out_interval_ms: u64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`: how often
    /// expired transactional ids are removed (default 3600000).
    pub remove_expired_interval_ms: u64,
}

impl Default for TxnConfig {
    fn default() -> Self {
        TxnConfig {
            state_log_partitions: 50,
            state_log_segment_bytes: 100 * 1024 * 1024,
            max_timeout_ms: 900_000,
            id_expiration_ms: 7 * 24 * 3_600_000,
            abort_timed_out_interval_ms: 10_000,
            remove_expired_interval_ms: 3_600_000,
        }
    }
}
