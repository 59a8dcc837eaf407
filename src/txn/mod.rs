//! The transaction coordinator (KIP-98), above the shards: it asks
//! partitions through their owner API and follows the leadership of its
//! `__transaction_state` partitions as a listener the shard calls. The
//! per-partition producer state it relies on (sequences, open and aborted
//! transactions, the LSO, snapshots) is below the shard, in
//! `crate::producer_state`; producer id blocks are the controller's
//! (`cluster::producer_ids`).
//!
//! * [`records`]: `__transaction_state` records in Kafka's schemas
//!   (TransactionLogKey / TransactionLogValue v0 and v1) and the client's
//!   transaction version (`records::TxnVersion`).
//! * [`coordinator`]: the transaction coordinator of every `transactional.id`
//!   whose `__transaction_state` partition this shard owns: applies the
//!   state machine's decisions (busy marks, appends, control markers over
//!   the cross-core channels, timeouts, recovery).
//! * [`state_machine`]: Kafka's transaction state machine as pure functions
//!   (request, metadata, time → transition, markers, answer).
//! * [`leader_add`]: partition leaders' adds (transactions v2) for one
//!   transactional id joined into one `__transaction_state` append.
//! * [`load`]: the replay of a `__transaction_state` partition.
//! * [`verify`]: the coordinator's side of Produce's KIP-890 check, as the
//!   owners ask it (`shard::owner::produce::TxnVerifier`).
//! * [`error`]: [`error::TxnError`], the coordinator's typed error.

pub mod coordinator;
pub mod error;
pub mod leader_add;
pub mod load;
pub mod records;
pub mod state_machine;
pub mod verify;

pub use crate::config::TxnConfig;
pub use coordinator::TransactionCoordinator;

/// The internal topic holding transaction metadata.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";
