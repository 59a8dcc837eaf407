//! ElectLeaders (key 43), v0–v2 (KIP-183, KIP-460): an operator asks for
//! preferred-leader elections (the first replica leads again when it is an
//! alive ISR member) or unclean ones (a leaderless partition takes an alive
//! replica outside the ISR when no ISR member is alive), for the given
//! partitions or all of them (`kafka-leader-election.sh`). Forwarded to the
//! active controller; the answer comes once the changes are applied here.
//! Per partition: 0, UNKNOWN_TOPIC_OR_PARTITION, ELECTION_NOT_NEEDED (84),
//! PREFERRED_LEADER_NOT_AVAILABLE (80), ELIGIBLE_LEADERS_NOT_AVAILABLE (83);
//! v1+ also have a top-level error code, and v0 has only the preferred
//! election.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{ask_controller, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::cluster::election::ElectionType;
use crate::cluster::error::{ControllerCallError, MetadataError};
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Runs the requested elections.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ElectLeadersRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let kind = match (version, req.election_type) {
        (0, _) | (_, 0) => Some(ElectionType::Preferred),
        (_, 1) => Some(ElectionType::Unclean),
        _ => None,
    };
    let asked: Option<Vec<(String, i32)>> = req.topic_partitions.as_ref().map(|tps| {
        tps.iter()
            .flat_map(|t| t.partitions.iter().map(|p| (t.topic.0.to_string(), *p)))
            .collect()
    });
    let mut resp = ElectLeadersResponse::default();
    // Kafka: ALTER on the cluster; refused, its error answer (the code at
    // the top, v1+, and on every partition asked for).
    if let Err(d) =
        Access::of(shard, frame).check(Operation::Alter, ResourceType::Cluster, CLUSTER_NAME)
    {
        if version >= 1 {
            resp.error_code = d.code();
        }
        resp.replica_election_results = req
            .topic_partitions
            .iter()
            .flatten()
            .map(|t| {
                let mut r = ReplicaElectionResult::default();
                r.topic = t.topic.clone();
                r.partition_result = t
                    .partitions
                    .iter()
                    .map(|p| {
                        let mut pr = PartitionResult::default();
                        pr.partition_id = *p;
                        pr.error_code = d.code();
                        pr
                    })
                    .collect();
                r
            })
            .collect();
        return Ok(respond(frame, &resp));
    }
    let Some(kind) = kind else {
        resp.error_code = codes::INVALID_REQUEST;
        return Ok(respond(frame, &resp));
    };
    let outcomes = match ask_controller(
        shard,
        ControllerRequest::ElectLeaders {
            kind,
            partitions: asked,
        },
    )
    .await
    {
        Ok(ControllerReply::ElectLeaders(o)) => o,
        Ok(_) => {
            resp.error_code = MetadataError::from(ControllerCallError::UnexpectedReply).code();
            return Ok(respond(frame, &resp));
        }
        Err(e) => {
            resp.error_code = e.code();
            return Ok(respond(frame, &resp));
        }
    };
    let mut by_topic: BTreeMap<String, Vec<PartitionResult>> = BTreeMap::new();
    for o in outcomes {
        let mut r = PartitionResult::default();
        r.partition_id = o.partition;
        if let Err(e) = &o.result {
            r.error_code = e.code();
            r.error_message = Some(StrBytes::from_string(e.to_string()));
        }
        by_topic.entry(o.topic).or_default().push(r);
    }
    resp.replica_election_results = by_topic
        .into_iter()
        .map(|(topic, partition_result)| {
            let mut t = ReplicaElectionResult::default();
            t.topic = TopicName(StrBytes::from_string(topic));
            t.partition_result = partition_result;
            t
        })
        .collect();
    Ok(respond(frame, &resp))
}
