//! Reaching the active controller from any shard: the metadata quorum's
//! member lives on shard 0 ([`crate::cluster::quorum::Quorum`]);
//! [`submit`] runs a [`ControllerRequest`] there, which decides it if this
//! node is the active controller and forwards it otherwise, and answers once
//! the records are applied on this node and published to every shard (and,
//! for a request that adds partitions, once this broker's shards opened the
//! partitions it gave them, which they do off the reactor), so a client
//! that gets a successful CreateTopics can produce at once on any
//! connection of this broker.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::cluster::control::{ControllerReply, ControllerRequest, PRODUCER_ID_BLOCK};
use crate::cluster::error::ControllerCallError;

use super::Shard;

/// Runs `req` through the metadata quorum and gives the controller's reply.
/// A CreateTopics or CreatePartitions is answered once every shard of this
/// broker opened the partitions the records gave it (at most
/// `controller.quorum.request.timeout.ms` more: past that the client finds
/// them still opening, NOT_LEADER_OR_FOLLOWER, and retries).
/// Errors: the quorum is not running on shard 0 or no active controller
/// answered within `controller.socket.timeout.ms` (REQUEST_TIMED_OUT).
pub async fn submit(
    shard: &Rc<Shard>,
    req: ControllerRequest,
) -> Result<ControllerReply, ControllerCallError> {
    // New partitions, and changes to who may do what (ACLs, SCRAM
    // credentials) or how much (client quotas), are answered once every shard of this broker applied
    // them, so the client that made them sees them on any connection here.
    let wait_everywhere = matches!(
        req,
        ControllerRequest::CreateTopics { .. }
            | ControllerRequest::CreatePartitions { .. }
            | ControllerRequest::CreateAcls { .. }
            | ControllerRequest::DeleteAcls { .. }
            | ControllerRequest::AlterUserScramCredentials { .. }
            | ControllerRequest::AlterClientQuotas { .. }
    );
    let within = Duration::from_millis(shard.config.cluster.controller_socket_timeout_ms);
    let (reply, offset) = shard
        .invoke_on(0, move |s| async move {
            let q = s.quorum().ok_or(ControllerCallError::NotStarted)?;
            q.submit_within(req, within)
                .await
                .map(|a| (a.reply, a.offset))
                .map_err(ControllerCallError::Unavailable)
        })
        .await??;
    if wait_everywhere {
        let wait = Duration::from_millis(shard.config.cluster.request_timeout_ms);
        if !super::opened_everywhere(shard, offset, Some(Instant::now() + wait)).await {
            log::debug!("partitions of metadata offset {offset} still opening at the answer");
        }
    }
    Ok(reply)
}

/// A producer id never handed out before (InitProducerId): from this
/// broker's current block, refilled with AllocateProducerIds from the
/// active controller (blocks of [`PRODUCER_ID_BLOCK`]).
pub async fn new_producer_id(shard: &Rc<Shard>) -> Result<i64, ControllerCallError> {
    shard
        .invoke_on(0, move |s| async move {
            if let Some(id) = s.take_producer_id() {
                return Ok(id);
            }
            let q = s.quorum().ok_or(ControllerCallError::NotStarted)?;
            let epoch = q.broker_epoch().ok_or(ControllerCallError::NotRegistered)?;
            let req = ControllerRequest::AllocateProducerIds {
                broker_id: s.config.node_id,
                broker_epoch: epoch,
            };
            let within = Duration::from_millis(s.config.cluster.controller_socket_timeout_ms);
            match q
                .submit_within(req, within)
                .await
                .map_err(ControllerCallError::Unavailable)?
                .reply
            {
                ControllerReply::ProducerIds(Ok(block)) => {
                    s.set_producer_ids(block.first, block.first + block.size.max(1));
                    s.take_producer_id()
                        .ok_or(ControllerCallError::NotRegistered)
                }
                ControllerReply::ProducerIds(Err(e)) => Err(ControllerCallError::Lifecycle(e)),
                _ => Err(ControllerCallError::UnexpectedReply),
            }
        })
        .await?
}

/// The metadata quorum's state from the active controller (DescribeQuorum).
pub async fn describe_quorum(
    shard: &Rc<Shard>,
) -> Result<crate::cluster::quorum::rpc::QuorumStatus, ControllerCallError> {
    shard
        .invoke_on(0, move |s| async move {
            let q = s.quorum().ok_or(ControllerCallError::NotStarted)?;
            q.describe().await.map_err(ControllerCallError::Unavailable)
        })
        .await?
}

/// The size of a producer id block (for docs and tests).
pub const BLOCK: i64 = PRODUCER_ID_BLOCK;
