//! The way a share-partition's leader reaches the share coordinator
//! (KIP-932) of the broker leading the share-partition's
//! `__share_group_state` partition: a [`ShareStateStore`] installed at
//! start-up (`replication::share_store`), as the shard names no
//! coordinator. Its error, [`ShareCoordinatorError`], is the share
//! coordinator's own, mapped to Kafka codes in `crate::error`.

use std::rc::Rc;

use crate::cluster::error::CoordinatorLookupError;
use crate::mesh::ShardError;
use crate::shard::error::AppendFailure;
use crate::shard::owner::produce::LocalFuture;
use crate::shard::remote::{RemoteError, ShareStateCall, ShareStateReply};
use crate::shard::Shard;
use crate::share::state::{ShareStateError, StateKey};

/// Why a share-state call fails; `crate::error` maps each to its Kafka code.
#[derive(Debug, thiserror::Error)]
pub enum ShareCoordinatorError {
    /// The request is refused by the state's rules (INVALID_REQUEST,
    /// FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, UNKNOWN_TOPIC_OR_PARTITION).
    #[error(transparent)]
    State(#[from] ShareStateError),
    /// NOT_COORDINATOR (16) / COORDINATOR_NOT_AVAILABLE (15): this broker
    /// does not lead the key's `__share_group_state` partition, or the
    /// topic does not exist yet.
    #[error(transparent)]
    Lookup(#[from] CoordinatorLookupError),
    /// COORDINATOR_LOAD_IN_PROGRESS (14): the partition is being replayed.
    #[error("the share-group state partition is loading")]
    LoadInProgress,
    /// NOT_COORDINATOR (16): the partition is not (or no longer) led on this
    /// shard.
    #[error("the share-group state partition is not led here")]
    NotCoordinator,
    /// COORDINATOR_NOT_AVAILABLE (15): the owner shard could not be reached.
    #[error("the share coordinator shard is unavailable: {0}")]
    Unavailable(ShardError),
    /// The call was forwarded to the broker leading the key's state
    /// partition and failed there (the code it answered), or that broker
    /// could not be reached (COORDINATOR_NOT_AVAILABLE).
    #[error("share coordinator on another broker: {0}")]
    Remote(RemoteError),
    /// The record could not be written (its append failure's code).
    #[error("append to __share_group_state-{partition} failed")]
    Append {
        /// The `__share_group_state` partition.
        partition: i32,
        /// Why the append failed.
        cause: AppendFailure,
    },
}

/// The share coordinator as the share-partition leaders reach it.
pub trait ShareStateStore {
    /// Runs `call` for the share-partition `key` on the share coordinator
    /// leading its state partition (this broker's, or another broker's by
    /// the inter-broker RPC), creating `__share_group_state` first when
    /// missing. Errors: the coordinator's, as [`ShareCoordinatorError`].
    fn call(
        &self,
        shard: Rc<Shard>,
        key: StateKey,
        call: ShareStateCall,
    ) -> LocalFuture<Result<ShareStateReply, ShareCoordinatorError>>;
}
