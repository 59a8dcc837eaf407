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

use super::{group_owner, respond, HandlerResult};
use crate::error::KafkaCode;
use crate::group::{coordinator, FetchedOffset};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

async fn fetch_group(
    shard: &Rc<Shard>,
    group: String,
    wanted: Option<Vec<(String, i32)>>,
    require_stable: bool,
) -> Result<Vec<FetchedOffset>, i16> {
    let owner = group_owner(shard, &group).map_err(|e| e.code())?;
    shard
        .invoke_on(owner, move |s| async move {
            coordinator::fetch_offsets(&s, &group, wanted, require_stable)
        })
        .await
        .map_err(|e| e.code())?
        .map_err(|e| e.code())
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
            match fetch_group(shard, g.group_id.0.to_string(), wanted, req.require_stable).await {
                Ok(offsets) => {
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
        req.group_id.0.to_string(),
        wanted,
        req.require_stable,
    )
    .await
    {
        Ok(offsets) => {
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
