//! Idempotent producers (KIP-98): producer ids, and per-partition producer
//! state that drops retried duplicates and rejects sequence gaps.
//! The partition side of transactions (ongoing and aborted transactions, the
//! last stable offset) is [`partition_txns`]; the transaction coordinator
//! writes markers through `Partition::write_marker`.

pub mod partition_txns;
pub mod producer_ids;
pub mod producer_state;
