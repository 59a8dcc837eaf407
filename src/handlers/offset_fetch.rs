//! OffsetFetch (key 9), v1–v9; v8+ fetches several groups in one request
//! (KIP-709). A null topic list returns every committed offset of the group;
//! a partition without a commit answers offset -1.

use std::rc::Rc;

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{group_owner, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::error::{codes, KafkaCode};
use crate::group::{coordinator, FetchedOffset};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// A group's committed offsets, and the topics asked for that the request
/// may not describe (answered TOPIC_AUTHORIZATION_FAILED per partition).
type GroupOffsets = (Vec<FetchedOffset>, Vec<(String, Vec<i32>)>);

/// Kafka's checks: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED for
/// the group), then DESCRIBE on each topic: a topic asked for is refused
/// per partition, and one of an all-topics answer left out.
async fn fetch_group(
    shard: &Rc<Shard>,
    access: &Access,
    group: String,
    wanted: Option<Vec<(String, i32)>>,
    require_stable: bool,
    member: Option<(String, i32)>,
) -> Result<GroupOffsets, i16> {
    access
        .check(Operation::Describe, ResourceType::Group, &group)
        .map_err(|d| d.code())?;
    let mut refused: Vec<(String, Vec<i32>)> = Vec::new();
    let wanted = wanted.map(|w| {
        w.into_iter()
            .filter(|(t, p)| {
                if refused.iter().any(|(r, _)| r == t) {
                    if let Some((_, ps)) = refused.iter_mut().find(|(r, _)| r == t) {
                        ps.push(*p);
                    }
                    return false;
                }
                if access.allows(Operation::Describe, ResourceType::Topic, t) {
                    return true;
                }
                refused.push((t.clone(), vec![*p]));
                false
            })
            .collect::<Vec<_>>()
    });
    let all = wanted.is_none();
    let owner = group_owner(shard, &group).map_err(|e| e.code())?;
    let mut offsets = shard
        .invoke_on(owner, move |s| async move {
            coordinator::fetch_offsets(&s, &group, wanted, require_stable, member)
        })
        .await
        .map_err(|e| e.code())?
        .map_err(|e| e.code())?;
    if all {
        offsets.retain(|o| access.allows(Operation::Describe, ResourceType::Topic, &o.topic));
    }
    Ok((offsets, refused))
}

fn group_topics(offsets: &[FetchedOffset]) -> Vec<(String, Vec<&FetchedOffset>)> {
    let mut out: Vec<(String, Vec<&FetchedOffset>)> = Vec::new();
    for o in offsets {
        match out.iter_mut().find(|(t, _)| *t == o.topic) {
            Some((_, v)) => v.push(o),
            None => out.push((o.topic.clone(), vec![o])),
        }
    }
    out
}

/// Answers OffsetFetch.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: OffsetFetchRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let mut resp = OffsetFetchResponse::default();
    let access = Access::of(shard, frame);
    if version >= 8 {
        for g in &req.groups {
            let wanted = g.topics.as_ref().map(|ts| {
                ts.iter()
                    .flat_map(|t| {
                        t.partition_indexes
                            .iter()
                            .map(move |p| (t.name.0.to_string(), *p))
                    })
                    .collect()
            });
            let mut rg = OffsetFetchResponseGroup::default();
            rg.group_id = g.group_id.clone();
            // v9 (KIP-848): the member's id and epoch, checked against a
            // consumer group's member.
            let member = (version >= 9).then(|| {
                (
                    g.member_id
                        .as_ref()
                        .map(|m| m.to_string())
                        .unwrap_or_default(),
                    g.member_epoch,
                )
            });
            match fetch_group(
                shard,
                &access,
                g.group_id.0.to_string(),
                wanted,
                req.require_stable,
                member,
            )
            .await
            {
                Ok((offsets, refused)) => {
                    rg.topics = group_topics(&offsets)
                        .into_iter()
                        .map(|(t, ps)| {
                            let mut rt = OffsetFetchResponseTopics::default();
                            rt.name = TopicName(StrBytes::from_string(t));
                            rt.partitions = ps
                                .into_iter()
                                .map(|o| {
                                    let mut rp = OffsetFetchResponsePartitions::default();
                                    rp.partition_index = o.partition;
                                    rp.committed_offset = o.offset;
                                    rp.committed_leader_epoch = o.leader_epoch;
                                    rp.metadata = Some(StrBytes::from_string(o.metadata.clone()));
                                    rp.error_code = o.error.as_ref().map_or(0, KafkaCode::code);
                                    rp
                                })
                                .collect();
                            rt
                        })
                        .collect();
                    rg.topics.extend(refused.into_iter().map(|(t, ps)| {
                        let mut rt = OffsetFetchResponseTopics::default();
                        rt.name = TopicName(StrBytes::from_string(t));
                        rt.partitions = ps
                            .into_iter()
                            .map(|p| {
                                let mut rp = OffsetFetchResponsePartitions::default();
                                rp.partition_index = p;
                                rp.committed_offset = -1;
                                rp.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                                rp
                            })
                            .collect();
                        rt
                    }));
                }
                Err(code) => rg.error_code = code,
            }
            resp.groups.push(rg);
        }
        return Ok(respond(frame, &resp));
    }
    let wanted = req.topics.as_ref().map(|ts| {
        ts.iter()
            .flat_map(|t| {
                t.partition_indexes
                    .iter()
                    .map(move |p| (t.name.0.to_string(), *p))
            })
            .collect()
    });
    match fetch_group(
        shard,
        &access,
        req.group_id.0.to_string(),
        wanted,
        req.require_stable,
        None,
    )
    .await
    {
        Ok((offsets, refused)) => {
            resp.topics = group_topics(&offsets)
                .into_iter()
                .map(|(t, ps)| {
                    let mut rt = OffsetFetchResponseTopic::default();
                    rt.name = TopicName(StrBytes::from_string(t));
                    rt.partitions = ps
                        .into_iter()
                        .map(|o| {
                            let mut rp = OffsetFetchResponsePartition::default();
                            rp.partition_index = o.partition;
                            rp.committed_offset = o.offset;
                            rp.committed_leader_epoch =
                                if version >= 5 { o.leader_epoch } else { -1 };
                            rp.metadata = Some(StrBytes::from_string(o.metadata.clone()));
                            rp.error_code = o.error.as_ref().map_or(0, KafkaCode::code);
                            rp
                        })
                        .collect();
                    rt
                })
                .collect();
            resp.topics.extend(refused.into_iter().map(|(t, ps)| {
                let mut rt = OffsetFetchResponseTopic::default();
                rt.name = TopicName(StrBytes::from_string(t));
                rt.partitions = ps
                    .into_iter()
                    .map(|p| {
                        let mut rp = OffsetFetchResponsePartition::default();
                        rp.partition_index = p;
                        rp.committed_offset = -1;
                        rp.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                        rp
                    })
                    .collect();
                rt
            }));
        }
        Err(code) => {
            if version >= 2 {
                resp.error_code = code;
            } else {
                // v1 has no top-level error: report it on each requested partition.
                resp.topics = req
                    .topics
                    .iter()
                    .flatten()
                    .map(|t| {
                        let mut rt = OffsetFetchResponseTopic::default();
                        rt.name = t.name.clone();
                        rt.partitions = t
                            .partition_indexes
                            .iter()
                            .map(|p| {
                                let mut rp = OffsetFetchResponsePartition::default();
                                rp.partition_index = *p;
                                rp.committed_offset = -1;
                                rp.error_code = code;
                                rp
                            })
                            .collect();
                        rt
                    })
                    .collect();
            }
        }
    }
    Ok(respond(frame, &resp))
}
