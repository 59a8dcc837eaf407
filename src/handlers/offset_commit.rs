//! OffsetCommit (key 8), v2–v9 (the protocol crate starts at v2). Offsets are
//! written to `__consumer_offsets` (Kafka's OffsetCommitValue v3, with leader
//! epoch and metadata) before the response; a commit with generation -1 and
//! no member id is a "simple" commit, allowed for groups without members.

use std::rc::Rc;

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};

use super::authz::Access;
use super::{group_owner, respond, Answers, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::{group_code, KafkaCode};
use crate::group::{coordinator, CommitPartition, UnknownGroup};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers OffsetCommit.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: OffsetCommitRequest = frame.decode()?;
    let image = shard.metadata();
    let group = req.group_id.0.to_string();
    // Kafka's checks: READ on the group (every partition
    // GROUP_AUTHORIZATION_FAILED), then READ on each topic
    // (TOPIC_AUTHORIZATION_FAILED, before whether it exists).
    let access = Access::of(shard, frame);
    let group_refused = access
        .check(Operation::Read, ResourceType::Group, &group)
        .err()
        .map(|d| d.code());
    let mut pre: Vec<Option<i16>> = Vec::new();
    let mut parts = Vec::new();
    for t in &req.topics {
        let refused = group_refused.or_else(|| {
            access
                .check(Operation::Read, ResourceType::Topic, &t.name.0)
                .err()
                .map(|d| d.code())
        });
        for p in &t.partitions {
            pre.push(refused);
            if refused.is_some() {
                continue;
            }
            parts.push(CommitPartition::checked(
                &image,
                &t.name.0,
                p.partition_index,
                p.committed_offset,
                p.committed_leader_epoch,
                p.committed_metadata.as_ref().map(|m| m.to_string()),
            ));
        }
    }
    let n = parts.len();
    let decided: Vec<i16> = match group_owner(shard, &group).map_err(|e| e.code()) {
        _ if n == 0 => Vec::new(),
        Err(code) => vec![code; n],
        Ok(owner) => {
            let unknown = UnknownGroup::for_offset_commit(frame.prefix.api_version);
            let (generation, member, instance) = (
                req.generation_id_or_member_epoch,
                req.member_id.to_string(),
                req.group_instance_id.as_ref().map(|s| s.to_string()),
            );
            shard
                .invoke_on(owner, move |s| async move {
                    coordinator::commit(s, group, generation, member, instance, parts, unknown)
                        .await
                        .iter()
                        .map(group_code)
                        .collect::<Vec<i16>>()
                })
                .await
                .unwrap_or_else(|e| vec![e.code(); n])
        }
    };
    let mut answers = Answers::merged(&pre, decided);
    let mut resp = OffsetCommitResponse::default();
    resp.topics = req
        .topics
        .iter()
        .map(|t| {
            let mut rt = OffsetCommitResponseTopic::default();
            rt.name = t.name.clone();
            rt.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut rp = OffsetCommitResponsePartition::default();
                    rp.partition_index = p.partition_index;
                    rp.error_code = answers.next_code();
                    rp
                })
                .collect();
            rt
        })
        .collect();
    Ok(respond(frame, &resp))
}
