//! The channel mesh between shards, as the layers above see it: the one
//! error a cross-shard call can end with. It sits below every layer (it
//! uses nothing of Fjord's) so that the cluster, the coordinators and the
//! shards can all carry it; `src/error.rs` maps it to REQUEST_TIMED_OUT (7).

/// Errors of cross-shard work.
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum ShardError {
    /// The target shard is gone (shutdown); the outcome of the work is unknown,
    /// so clients must retry: REQUEST_TIMED_OUT (7), as Redpanda does.
    #[error("shard {0} is not available")]
    Unavailable(usize),
}
