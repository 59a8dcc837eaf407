//! DescribeQuorum (key 55), v0–v2 (KIP-595, KIP-836, KIP-853): the metadata
//! quorum as the active controller reports it — leader, its epoch (the Raft
//! term), the high watermark (the offset after the last committed entry) and
//! each voter's and observer's log end offset and last fetch and catch-up
//! times — for `__cluster_metadata` partition 0. Any broker answers: it asks
//! the active controller. Other topics or partitions get
//! UNKNOWN_TOPIC_OR_PARTITION; no reachable controller gives the call's code
//! (REQUEST_TIMED_OUT or NOT_CONTROLLER) at the top level.

use std::rc::Rc;

use kafka_protocol::messages::describe_quorum_response::{
    Listener, Node, PartitionData, ReplicaState, TopicData,
};
use kafka_protocol::messages::{BrokerId, DescribeQuorumRequest, DescribeQuorumResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::cluster::quorum::rpc::ReplicaStatus;
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::controller_call::describe_quorum;
use crate::shard::Shard;

/// The metadata log's topic name, as Kafka names it.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

fn replica(r: &ReplicaStatus, version: i16) -> ReplicaState {
    let mut s = ReplicaState::default();
    s.replica_id = BrokerId(r.node_id);
    s.log_end_offset = r.log_end_offset;
    if version >= 1 {
        s.last_fetch_timestamp = r.last_fetch_ms;
        s.last_caught_up_timestamp = r.last_caught_up_ms;
    }
    s
}

/// Answers DescribeQuorum.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DescribeQuorumRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let mut resp = DescribeQuorumResponse::default();
    // Kafka: DESCRIBE on the cluster; refused, the code at the top.
    if let Err(d) =
        Access::of(shard, frame).check(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME)
    {
        resp.error_code = d.code();
        return Ok(respond(frame, &resp));
    }
    let status = match describe_quorum(shard).await {
        Ok(s) => s,
        Err(e) => {
            resp.error_code = e.code();
            if version >= 2 {
                resp.error_message = Some(StrBytes::from_string(e.to_string()));
            }
            return Ok(respond(frame, &resp));
        }
    };
    for t in &req.topics {
        let mut td = TopicData::default();
        td.topic_name = t.topic_name.clone();
        for p in &t.partitions {
            let mut pd = PartitionData::default();
            pd.partition_index = p.partition_index;
            if &*t.topic_name.0 != METADATA_TOPIC || p.partition_index != 0 {
                pd.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
                pd.leader_id = BrokerId(-1);
                pd.leader_epoch = -1;
                pd.high_watermark = -1;
            } else {
                pd.leader_id = BrokerId(status.leader_id);
                pd.leader_epoch = i32::try_from(status.leader_epoch).unwrap_or(i32::MAX);
                pd.high_watermark = status.high_watermark;
                pd.current_voters = status.voters.iter().map(|r| replica(r, version)).collect();
                pd.observers = status
                    .observers
                    .iter()
                    .map(|r| replica(r, version))
                    .collect();
            }
            td.partitions.push(pd);
        }
        resp.topics.push(td);
    }
    if version >= 2 {
        resp.nodes = status
            .endpoints
            .iter()
            .filter_map(|(id, addr)| {
                let (host, port) = addr.rsplit_once(':')?;
                let mut l = Listener::default();
                l.name = StrBytes::from_static_str("CONTROLLER");
                l.host = StrBytes::from_string(host.to_string());
                l.port = port.parse().ok()?;
                let mut n = Node::default();
                n.node_id = BrokerId(*id);
                n.listeners = vec![l];
                Some(n)
            })
            .collect();
    }
    Ok(respond(frame, &resp))
}
