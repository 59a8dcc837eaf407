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
//! * [`verify`]: the coordinator's side of Produce's KIP-890 check, as the
//!   owners ask it (`shard::owner::produce::TxnVerifier`).
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
pub mod verify;

pub use crate::config::TxnConfig;
pub use coordinator::TransactionCoordinator;

/// The internal topic holding transaction metadata.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";
