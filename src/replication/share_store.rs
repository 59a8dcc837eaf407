//! The share coordinator as the share-partition leaders reach it (KIP-932,
//! Kafka's persister): the installed
//! [`ShareStateStore`](crate::shard::share_store::ShareStateStore). A call
//! runs on this broker's share coordinator; when another broker leads the
//! key's `__share_group_state` partition it is sent there as the
//! inter-broker RPC (Read/Write/Initialize/DeleteShareGroupState v0,
//! through `replication::remote`). `__share_group_state` is created first
//! when missing, as Kafka's persister finds it with FindCoordinator.

use std::rc::Rc;

use crate::cluster::error::CoordinatorLookupError as L;
use crate::shard::owner::produce::LocalFuture;
use crate::shard::remote::{RemoteError, ShareStateCall, ShareStateReply};
use crate::shard::share_store::{ShareCoordinatorError, ShareStateStore};
use crate::shard::Shard;
use crate::share::state::{ShareStateError, StateKey};
use crate::share_coordinator as coord;
use kafka_protocol::ResponseError;

/// Creates `__share_group_state` when missing (the FindCoordinator
/// handler's creation, given at start-up). Errors with the
/// [`CoordinatorLookupError`](L) (COORDINATOR_NOT_AVAILABLE).
pub type EnsureTopic = fn(Rc<Shard>) -> LocalFuture<Result<(), L>>;

/// The share coordinator, local or forwarded.
#[derive(Debug)]
pub struct CoordinatorStore {
    ensure_topic: EnsureTopic,
}

impl CoordinatorStore {
    /// Installs it on `shard` (start-up, every shard), creating
    /// `__share_group_state` with `ensure_topic` when missing.
    pub fn install(shard: &Shard, ensure_topic: EnsureTopic) {
        shard.set_share_store(Rc::new(CoordinatorStore { ensure_topic }));
    }
}

/// A refusal of another broker's share coordinator as the typed error
/// this broker's would have given: COORDINATOR_LOAD_IN_PROGRESS,
/// NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE (retried by the caller),
/// FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, and
/// INVALID_REQUEST on a read or write (the share-partition is not
/// initialized: the only invalid field of the leader's calls); any other
/// stays `Remote`.
fn typed(e: RemoteError, call: &ShareStateCall) -> ShareCoordinatorError {
    let RemoteError::Refused { code, .. } = &e else {
        return ShareCoordinatorError::Remote(e);
    };
    let code = *code;
    let is = |r: ResponseError| r.code() == code;
    if is(ResponseError::CoordinatorLoadInProgress) {
        ShareCoordinatorError::LoadInProgress
    } else if is(ResponseError::NotCoordinator) || is(ResponseError::CoordinatorNotAvailable) {
        ShareCoordinatorError::NotCoordinator
    } else if is(ResponseError::FencedLeaderEpoch) {
        ShareStateError::FencedLeaderEpoch.into()
    } else if is(ResponseError::FencedStateEpoch) {
        ShareStateError::FencedStateEpoch.into()
    } else if is(ResponseError::UnknownTopicOrPartition) {
        ShareStateError::UnknownTopicOrPartition.into()
    } else if is(ResponseError::InvalidRequest) {
        match call {
            ShareStateCall::Read { .. } => ShareStateError::ReadUninitialized.into(),
            ShareStateCall::Write(_) => ShareStateError::WriteUninitialized.into(),
            ShareStateCall::Initialize { .. }
            | ShareStateCall::Delete
            | ShareStateCall::Summary => ShareStateError::NegativePartition.into(),
        }
    } else {
        ShareCoordinatorError::Remote(e)
    }
}

impl ShareStateStore for CoordinatorStore {
    fn call(
        &self,
        shard: Rc<Shard>,
        key: StateKey,
        call: ShareStateCall,
    ) -> LocalFuture<Result<ShareStateReply, ShareCoordinatorError>> {
        let self_ensure = self.ensure_topic;
        Box::pin(async move {
            (self_ensure)(shard.clone()).await?;
            on_coordinator(&shard, &key, call).await
        })
    }
}

/// `call` for `key` on the share coordinator leading its state partition:
/// this broker's, or another broker's through the inter-broker RPC (as
/// Kafka's persister sends it) when the local call answers that another
/// broker leads the partition.
async fn on_coordinator(
    shard: &Rc<Shard>,
    key: &StateKey,
    call: ShareStateCall,
) -> Result<ShareStateReply, ShareCoordinatorError> {
    let k = key.clone();
    let local = match call.clone() {
        ShareStateCall::Initialize {
            state_epoch,
            start_offset,
        } => coord::initialize(shard, k, state_epoch, start_offset)
            .await
            .map(|()| ShareStateReply::Done),
        ShareStateCall::Read { leader_epoch } => coord::read(shard, k, leader_epoch)
            .await
            .map(ShareStateReply::Read),
        ShareStateCall::Write(w) => coord::write(shard, k, w)
            .await
            .map(|()| ShareStateReply::Done),
        ShareStateCall::Delete => coord::delete(shard, k)
            .await
            .map(|()| ShareStateReply::Done),
        ShareStateCall::Summary => coord::summary(shard, k).await.map(ShareStateReply::Summary),
    };
    match local {
        Err(ShareCoordinatorError::Lookup(L::NotCoordinator { leader, .. }))
            if leader >= 0 && leader != shard.config.node_id =>
        {
            let remote = shard
                .remote()
                .ok_or(ShareCoordinatorError::Remote(RemoteError::NotInstalled))?;
            let sent = call.clone();
            remote
                .share_state(shard.clone(), leader, key.clone(), sent)
                .await
                .map_err(|e| typed(e, &call))
        }
        other => other,
    }
}
