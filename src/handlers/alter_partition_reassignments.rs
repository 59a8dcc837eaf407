//! AlterPartitionReassignments (key 45), v0–v1 (KIP-455; v1's
//! `allow_replication_factor_change` is KIP-860): an operator moves
//! partitions' replicas to target brokers, or cancels an ongoing move with a
//! null replica list (`kafka-reassign-partitions --execute` / `--cancel`).
//! Forwarded to the active controller, which starts each reassignment
//! (`cluster::reassignment`); the answer comes once the change is applied
//! here, the move itself goes on in the background. Per partition: 0,
//! UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (39),
//! INVALID_REPLICATION_FACTOR (38, v1 with the flag false),
//! NO_REASSIGNMENT_IN_PROGRESS (85); a controller that cannot be reached is
//! the top-level error (REQUEST_TIMED_OUT).

use std::rc::Rc;

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{ask_controller, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::cluster::error::{ControllerCallError, MetadataError};
use crate::cluster::reassignment::ReassignTarget;
use crate::error::KafkaCode;
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Starts or cancels the requested reassignments.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: AlterPartitionReassignmentsRequest = frame.decode()?;
    // v0 has no flag: a replication factor change is allowed (the field's
    // default, as Kafka reads a v0 request).
    let allow = frame.prefix.api_version < 1 || req.allow_replication_factor_change;
    let targets: Vec<ReassignTarget> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| ReassignTarget {
                topic: t.name.0.to_string(),
                partition: p.partition_index,
                replicas: p
                    .replicas
                    .as_ref()
                    .map(|rs| rs.iter().map(|b| b.0).collect()),
            })
        })
        .collect();
    let mut resp = AlterPartitionReassignmentsResponse::default();
    resp.allow_replication_factor_change = allow;
    // Kafka: ALTER on the cluster; refused, the code at the top and on every
    // partition.
    let refused = Access::of(shard, frame)
        .check(Operation::Alter, ResourceType::Cluster, CLUSTER_NAME)
        .err()
        .map(|d| d.code());
    let outcome = if let Some(code) = refused {
        resp.error_code = code;
        Ok(vec![])
    } else {
        match ask_controller(
            shard,
            ControllerRequest::AlterPartitionReassignments {
                targets,
                allow_replication_factor_change: allow,
            },
        )
        .await
        {
            Ok(ControllerReply::AlterPartitionReassignments(results)) => Ok(results),
            Ok(_) => Err(MetadataError::from(ControllerCallError::UnexpectedReply)),
            Err(e) => Err(e),
        }
    };
    let mut results = match &outcome {
        Ok(results) => results.iter().map(|r| match r {
            Ok(()) => (0, None),
            Err(e) => (e.code(), Some(e.to_string())),
        }),
        Err(e) => {
            resp.error_code = e.code();
            resp.error_message = Some(StrBytes::from_string(e.to_string()));
            return Ok(respond(frame, &resp));
        }
    };
    resp.responses = req
        .topics
        .iter()
        .map(|t| {
            let mut tr = ReassignableTopicResponse::default();
            tr.name = t.name.clone();
            tr.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let (code, message) = match refused {
                        Some(code) => (code, None),
                        None => results.next().unwrap_or((0, None)),
                    };
                    let mut pr = ReassignablePartitionResponse::default();
                    pr.partition_index = p.partition_index;
                    pr.error_code = code;
                    pr.error_message = message.map(StrBytes::from_string);
                    pr
                })
                .collect();
            tr
        })
        .collect();
    Ok(respond(frame, &resp))
}
