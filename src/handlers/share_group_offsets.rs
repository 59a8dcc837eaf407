//! DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and
//! DeleteShareGroupOffsets (92), v0 (KIP-932; the protocol crate's only
//! version): decoded here, run by `group::share_offsets`, encoded with
//! Kafka 4.4's codes and messages. Before the group: UNSUPPORTED_VERSION
//! while `share.version` < 1, then the group ACL (DESCRIBE, READ, DELETE
//! respectively: GROUP_AUTHORIZATION_FAILED) and the group's coordinator
//! (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE). Topics the caller may not
//! DESCRIBE (Describe) or READ (Alter, Delete) are answered
//! TOPIC_AUTHORIZATION_FAILED and not touched.

use std::rc::Rc;

use kafka_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kafka_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse, DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::authz::Access;
use super::share_group_heartbeat::share_groups_enabled;
use super::{group_owner, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::KafkaCode;
use crate::group::share_offsets::{self, GroupRefusal};
use crate::protocol::RequestFrame;
use crate::shard::share_store::ShareCoordinatorError;
use crate::shard::Shard;

/// A group-level failure as (code, message).
type Failure = (i16, Option<StrBytes>);

fn refusal((e, m): GroupRefusal) -> Failure {
    (e.code(), m.map(StrBytes::from_string))
}

/// The gate, the group ACL and the coordinator shard of `group`.
fn route(shard: &Shard, access: &Access, op: Operation, group: &str) -> Result<usize, Failure> {
    if !share_groups_enabled(shard) {
        return Err((ResponseError::UnsupportedVersion.code(), None));
    }
    access
        .check(op, ResourceType::Group, group)
        .map_err(|d| (d.code(), None))?;
    group_owner(shard, group).map_err(|e| (e.code(), None))
}

/// A share-partition's error as (code, message): the share coordinator's
/// refusals carry their text (UNKNOWN_TOPIC_OR_PARTITION "This server does
/// not host this topic-partition.", as Kafka 4.4 answers).
fn partition_error(r: &Result<(), ShareCoordinatorError>) -> Failure {
    match r {
        Ok(()) => (0, None),
        Err(e @ ShareCoordinatorError::State(_)) => {
            (e.code(), Some(StrBytes::from_string(e.to_string())))
        }
        Err(e) => (e.code(), None),
    }
}

fn topic_denied() -> Failure {
    (ResponseError::TopicAuthorizationFailed.code(), None)
}

/// Answers DescribeShareGroupOffsets.
pub async fn describe(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DescribeShareGroupOffsetsRequest = frame.decode()?;
    let access = Access::of(shard, frame);
    let mut resp = DescribeShareGroupOffsetsResponse::default();
    for g in req.groups {
        let group = g.group_id.0.to_string();
        let mut w = DescribeShareGroupOffsetsResponseGroup::default();
        w.group_id = g.group_id.clone();
        let owner = match route(shard, &access, Operation::Describe, &group) {
            Ok(o) => o,
            Err((code, m)) => {
                w.error_code = code;
                w.error_message = m;
                resp.groups.push(w);
                continue;
            }
        };
        let allowed = |name: &str| {
            access
                .check(Operation::Describe, ResourceType::Topic, name)
                .is_ok()
        };
        let asked = g.topics.map(|ts| {
            ts.into_iter()
                .map(|t| (t.topic_name.0.to_string(), t.partitions))
                .collect::<Vec<_>>()
        });
        let denied: Vec<(String, Vec<i32>)> = asked
            .iter()
            .flatten()
            .filter(|(n, _)| !allowed(n))
            .cloned()
            .collect();
        let asked = asked.map(|ts| ts.into_iter().filter(|(n, _)| allowed(n)).collect());
        match share_offsets::describe(shard, owner, &group, asked).await {
            Err(r) => {
                let (code, m) = refusal(r);
                w.error_code = code;
                w.error_message = m;
            }
            Ok(topics) => {
                for t in topics {
                    let mut wt = DescribeShareGroupOffsetsResponseTopic::default();
                    wt.topic_name = TopicName(StrBytes::from_string(t.name.clone()));
                    wt.topic_id = t.id;
                    let hidden = !allowed(&t.name);
                    for p in t.partitions {
                        let mut wp = DescribeShareGroupOffsetsResponsePartition::default();
                        wp.partition_index = p.partition;
                        let (code, m) = if hidden {
                            topic_denied()
                        } else {
                            match &p.state {
                                Ok((start, epoch)) => {
                                    wp.start_offset = *start;
                                    wp.leader_epoch = *epoch;
                                    (0, None)
                                }
                                Err(e) => {
                                    wp.start_offset = -1;
                                    (e.code(), None)
                                }
                            }
                        };
                        if code != 0 {
                            wp.start_offset = -1;
                        }
                        wp.error_code = code;
                        wp.error_message = m;
                        wt.partitions.push(wp);
                    }
                    w.topics.push(wt);
                }
                for (name, parts) in denied {
                    let mut wt = DescribeShareGroupOffsetsResponseTopic::default();
                    wt.topic_name = TopicName(StrBytes::from_string(name));
                    for p in parts {
                        let mut wp = DescribeShareGroupOffsetsResponsePartition::default();
                        wp.partition_index = p;
                        wp.start_offset = -1;
                        wp.error_code = topic_denied().0;
                        wt.partitions.push(wp);
                    }
                    w.topics.push(wt);
                }
            }
        }
        resp.groups.push(w);
    }
    Ok(respond(frame, &resp))
}

/// Answers AlterShareGroupOffsets.
pub async fn alter(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: AlterShareGroupOffsetsRequest = frame.decode()?;
    let access = Access::of(shard, frame);
    let group = req.group_id.0.to_string();
    let mut resp = AlterShareGroupOffsetsResponse::default();
    let owner = match route(shard, &access, Operation::Read, &group) {
        Ok(o) => o,
        Err((code, m)) => {
            resp.error_code = code;
            resp.error_message = m;
            return Ok(respond(frame, &resp));
        }
    };
    let allowed = |name: &str| {
        access
            .check(Operation::Read, ResourceType::Topic, name)
            .is_ok()
    };
    let mut denied = Vec::new();
    let mut asked = Vec::new();
    for t in req.topics {
        let name = t.topic_name.0.to_string();
        let parts: Vec<(i32, i64)> = t
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.start_offset))
            .collect();
        if allowed(&name) {
            asked.push((name, parts));
        } else {
            denied.push((name, parts));
        }
    }
    match share_offsets::alter(shard, owner, &group, asked).await {
        Err(r) => {
            let (code, m) = refusal(r);
            resp.error_code = code;
            resp.error_message = m;
        }
        Ok(topics) => {
            for t in topics {
                let mut wt = AlterShareGroupOffsetsResponseTopic::default();
                wt.topic_name = TopicName(StrBytes::from_string(t.name));
                wt.topic_id = t.id;
                for (p, r) in t.partitions {
                    let mut wp = AlterShareGroupOffsetsResponsePartition::default();
                    wp.partition_index = p;
                    (wp.error_code, wp.error_message) = partition_error(&r);
                    wt.partitions.push(wp);
                }
                resp.responses.push(wt);
            }
            for (name, parts) in denied {
                let mut wt = AlterShareGroupOffsetsResponseTopic::default();
                wt.topic_name = TopicName(StrBytes::from_string(name));
                for (p, _) in parts {
                    let mut wp = AlterShareGroupOffsetsResponsePartition::default();
                    wp.partition_index = p;
                    wp.error_code = topic_denied().0;
                    wt.partitions.push(wp);
                }
                resp.responses.push(wt);
            }
        }
    }
    Ok(respond(frame, &resp))
}

/// Answers DeleteShareGroupOffsets.
pub async fn delete(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DeleteShareGroupOffsetsRequest = frame.decode()?;
    let access = Access::of(shard, frame);
    let group = req.group_id.0.to_string();
    let mut resp = DeleteShareGroupOffsetsResponse::default();
    let owner = match route(shard, &access, Operation::Delete, &group) {
        Ok(o) => o,
        Err((code, m)) => {
            resp.error_code = code;
            resp.error_message = m;
            return Ok(respond(frame, &resp));
        }
    };
    let (asked, denied): (Vec<String>, Vec<String>) = req
        .topics
        .iter()
        .map(|t| t.topic_name.0.to_string())
        .partition(|n| {
            access
                .check(Operation::Read, ResourceType::Topic, n)
                .is_ok()
        });
    match share_offsets::delete(shard, owner, &group, asked).await {
        Err(r) => {
            let (code, m) = refusal(r);
            resp.error_code = code;
            resp.error_message = m;
        }
        Ok(topics) => {
            for t in topics {
                let mut wt = DeleteShareGroupOffsetsResponseTopic::default();
                wt.topic_name = TopicName(StrBytes::from_string(t.name));
                wt.topic_id = t.id;
                (wt.error_code, wt.error_message) = partition_error(&t.result);
                resp.responses.push(wt);
            }
            for name in denied {
                let mut wt = DeleteShareGroupOffsetsResponseTopic::default();
                wt.topic_name = TopicName(StrBytes::from_string(name));
                wt.error_code = topic_denied().0;
                resp.responses.push(wt);
            }
        }
    }
    Ok(respond(frame, &resp))
}
