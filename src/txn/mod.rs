//! Idempotent producers (KIP-98): producer ids, and per-partition producer
//! state that drops retried duplicates and rejects sequence gaps.
//! Transactions (the transaction coordinator, markers, LSO) build on this.

pub mod producer_ids;
pub mod producer_state;
