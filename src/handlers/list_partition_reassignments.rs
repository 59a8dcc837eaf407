//! ListPartitionReassignments (key 46), v0 (KIP-455): the ongoing
//! reassignments with each partition's replicas, adding and removing
//! replicas, for the asked topics and partitions or for every partition
//! (`kafka-reassign-partitions --verify` / `--list`). Answered by the
//! active controller from its image, as Kafka's controller does; unknown
//! topics and partitions are left out. A controller that cannot be reached
//! is the top-level error (REQUEST_TIMED_OUT).

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    BrokerId, ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{ask_controller, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::cluster::error::{ControllerCallError, MetadataError};
use crate::error::KafkaCode;
use crate::protocol::RequestFrame;
use crate::shard::Shard;

fn brokers(ids: &[i32]) -> Vec<BrokerId> {
    ids.iter().copied().map(BrokerId).collect()
}

/// Lists the ongoing reassignments.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ListPartitionReassignmentsRequest = frame.decode()?;
    let topics: Option<Vec<(String, Vec<i32>)>> = req.topics.as_ref().map(|ts| {
        ts.iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
            .collect()
    });
    let mut resp = ListPartitionReassignmentsResponse::default();
    // Kafka: DESCRIBE on the cluster; refused, the code at the top and the
    // partitions asked for given back empty.
    if let Err(d) =
        Access::of(shard, frame).check(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME)
    {
        resp.error_code = d.code();
        resp.topics = topics
            .unwrap_or_default()
            .into_iter()
            .map(|(name, partitions)| {
                let mut t = OngoingTopicReassignment::default();
                t.name = TopicName(StrBytes::from_string(name));
                t.partitions = partitions
                    .into_iter()
                    .map(|i| {
                        let mut p = OngoingPartitionReassignment::default();
                        p.partition_index = i;
                        p
                    })
                    .collect();
                t
            })
            .collect();
        return Ok(respond(frame, &resp));
    }
    let ongoing = match ask_controller(
        shard,
        ControllerRequest::ListPartitionReassignments { topics },
    )
    .await
    {
        Ok(ControllerReply::ListPartitionReassignments(o)) => o,
        other => {
            let e = match other {
                Err(e) => e,
                Ok(_) => MetadataError::from(ControllerCallError::UnexpectedReply),
            };
            resp.error_code = e.code();
            resp.error_message = Some(StrBytes::from_string(e.to_string()));
            return Ok(respond(frame, &resp));
        }
    };
    let mut by_topic: BTreeMap<String, Vec<OngoingPartitionReassignment>> = BTreeMap::new();
    for o in ongoing {
        let mut p = OngoingPartitionReassignment::default();
        p.partition_index = o.partition;
        p.replicas = brokers(&o.replicas);
        p.adding_replicas = brokers(&o.adding);
        p.removing_replicas = brokers(&o.removing);
        by_topic.entry(o.topic).or_default().push(p);
    }
    resp.topics = by_topic
        .into_iter()
        .map(|(name, partitions)| {
            let mut t = OngoingTopicReassignment::default();
            t.name = TopicName(StrBytes::from_string(name));
            t.partitions = partitions;
            t
        })
        .collect();
    Ok(respond(frame, &resp))
}
