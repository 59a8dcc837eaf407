//! DescribeCluster (key 60), v0–v1 (KIP-700): the alive brokers, cluster id,
//! and as controller the active controller when it is an alive broker (the
//! lowest alive broker otherwise: clients send admin requests there, which
//! forwards them).

use std::rc::Rc;

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers DescribeCluster from the shard's metadata image.
pub fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DescribeClusterRequest = frame.decode()?;
    let image = shard.metadata();
    let mut resp = DescribeClusterResponse::default();
    resp.cluster_id = StrBytes::from_string(image.cluster_id.clone());
    resp.controller_id = BrokerId(super::client_controller_id(shard, &image));
    resp.endpoint_type = 1;
    // Kafka (AuthHelper.computeDescribeClusterResponse): no check for the
    // request itself on a broker; KIP-430's field, when asked for, is 0
    // without DESCRIBE on the cluster.
    resp.cluster_authorized_operations = if req.include_cluster_authorized_operations {
        let access = Access::of(shard, frame);
        if access.cluster(Operation::Describe) {
            access.operations(ResourceType::Cluster, CLUSTER_NAME)
        } else {
            0
        }
    } else {
        i32::MIN
    };
    resp.brokers = image
        .brokers(frame.listener())
        .iter()
        .map(|b| {
            let mut rb = DescribeClusterBroker::default();
            rb.broker_id = BrokerId(b.node_id);
            rb.host = StrBytes::from_string(b.host.clone());
            rb.port = b.port;
            rb.rack = b.rack.clone().map(StrBytes::from_string);
            rb
        })
        .collect();
    Ok(respond(frame, &resp))
}
