//! Fjord: a Kafka-wire-compatible message broker, thread-per-core on io_uring.
//!
//! Crate map (see docs/ARCHITECTURE.md for the request flows):
//! - [`admin`] — operator commands (`fjord groups …`) over the Kafka protocol.
//! - [`boot`] — config → data dir → executors (one pinned glommio executor per
//!   core, a *shard*) → channel mesh → recovery → listeners → signals.
//! - [`net`] — per-shard accept, framing, in-order responses, sendfile.
//! - [`protocol`] — the Kafka wire protocol (the `kafka-protocol` crate,
//!   wrapped), the table of supported API versions.
//! - [`handlers`] — dispatch and one file per Kafka API.
//! - [`shard`] — shard-local state, partition ownership, cross-shard calls.
//! - [`storage`] — the partition log in Kafka's segment format.
//! - [`group`] — the consumer-group coordinator and committed offsets.
//! - [`producer_state`] — per-partition producer state: idempotence
//!   (sequences, epochs), open and aborted transactions, the LSO, snapshots.
//! - [`txn`] — the transaction coordinator.
//! - [`cluster`] — metadata images and records, the metadata quorum (Raft on
//!   openraft), the active controller's decisions.
//! - [`config`] — Kafka-named configuration.
//! - [`metrics`] — the Prometheus-text endpoint (reactor stalls per shard).
//! - [`error`] — errors per layer and their Kafka error codes.

// The request futures nest deeply (connection → dispatch → handler → the
// controller call); the default limit is too low to lay them out.
#![recursion_limit = "256"]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod acl;
pub mod admin;
pub mod alloc;
pub mod boot;
pub mod cluster;
pub mod config;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod group;
pub mod handlers;
pub mod mesh;
pub mod metrics;
pub mod net;
pub mod producer_state;
pub mod protocol;
pub mod quota;
pub mod replication;
pub mod security;
pub mod shard;
pub mod share;
pub mod share_coordinator;
pub mod stall;
pub mod storage;
pub mod transport;
pub mod txn;

#[cfg(test)]
mod layering;
