//! DescribeTopicPartitions (key 75), v0 (KIP-966): every partition's
//! leader, epochs, replicas, ISR, Eligible Leader Replicas and last known
//! ELR, from the metadata image. Kafka 4's admin client describes topics
//! with it (`kafka-topics --describe` prints its `Elr` and `LastKnownElr`).
//!
//! As Kafka's broker answers it: the topics (all of them when the request
//! names none; unknown named topics get UNKNOWN_TOPIC_OR_PARTITION, or
//! INVALID_TOPIC_EXCEPTION for an invalid name) in name order, starting at
//! the request's cursor (topic name, partition index); at most
//! `response_partition_limit` partitions (and at most
//! [`MAX_PARTITIONS_PER_RESPONSE`], Kafka's
//! `max.request.partition.size.limit` default); when more remain,
//! `next_cursor` names the first one left out.

use std::rc::Rc;

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::cluster::metadata::{MetadataImage, TopicMeta, NO_LEADER};
use crate::cluster::topic_name;
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Most partitions one response holds (Kafka's
/// `max.request.partition.size.limit` default).
pub const MAX_PARTITIONS_PER_RESPONSE: i32 = 2000;

fn ids(v: &[i32]) -> Vec<BrokerId> {
    v.iter().copied().map(BrokerId).collect()
}

fn name(n: &str) -> TopicName {
    TopicName(StrBytes::from_string(n.to_string()))
}

/// Partitions `from..` of `t`, at most `limit` of them.
fn partitions(
    image: &MetadataImage,
    t: &TopicMeta,
    from: usize,
    limit: usize,
) -> Vec<DescribeTopicPartitionsResponsePartition> {
    t.assignments
        .iter()
        .enumerate()
        .skip(from)
        .take(limit)
        .map(|(i, p)| {
            let mut rp = DescribeTopicPartitionsResponsePartition::default();
            rp.partition_index = i as i32;
            rp.leader_id = BrokerId(p.leader);
            rp.leader_epoch = p.leader_epoch;
            rp.replica_nodes = ids(&p.replicas);
            rp.isr_nodes = ids(&p.isr);
            rp.eligible_leader_replicas = Some(ids(&p.elr));
            rp.last_known_elr = Some(ids(&p.last_known_elr));
            rp.offline_replicas = ids(&image.offline_replicas(p));
            if p.leader == NO_LEADER {
                rp.error_code = codes::LEADER_NOT_AVAILABLE;
            }
            rp
        })
        .collect()
}

/// Takes the image, the requested topic names (None: every topic), the
/// partition limit, the cursor (topic name, first partition) and the
/// request's access (`describable`: whether it may DESCRIBE a topic; `ops`:
/// a topic's KIP-430 authorized operations); gives the response (see the
/// module docs). As Kafka's: topics it may not describe are left out of an
/// all-topics answer, and named ones are answered last with
/// TOPIC_AUTHORIZATION_FAILED and no topic id, whether they exist or not.
pub fn describe(
    image: &MetadataImage,
    requested: Option<Vec<String>>,
    limit: i32,
    cursor: Option<(String, i32)>,
    describable: &dyn Fn(&str) -> bool,
    ops: &dyn Fn(&str) -> i32,
) -> DescribeTopicPartitionsResponse {
    let all = requested.is_none();
    let mut names: Vec<String> = match requested {
        Some(n) => n,
        None => image.topics.keys().map(|n| n.to_string()).collect(),
    };
    names.sort();
    names.dedup();
    if let Some((c, _)) = &cursor {
        names.retain(|n| n >= c);
    }
    let (names, refused): (Vec<String>, Vec<String>) =
        names.into_iter().partition(|n| describable(n));
    let mut remaining = usize::try_from(limit.min(MAX_PARTITIONS_PER_RESPONSE)).unwrap_or(0);
    let mut resp = DescribeTopicPartitionsResponse::default();
    for n in names {
        if remaining == 0 {
            // Every partition of the topics before fits: the next response
            // starts at this topic (which may not exist).
            let mut c = Cursor::default();
            c.topic_name = name(&n);
            c.partition_index = 0;
            resp.next_cursor = Some(c);
            break;
        }
        let mut rt = DescribeTopicPartitionsResponseTopic::default();
        rt.name = Some(name(&n));
        rt.is_internal = topic_name::is_internal(&n);
        rt.topic_authorized_operations = ops(&n);
        let Some(t) = image.topic(&n) else {
            if !all {
                rt.error_code = match topic_name::validate(&n) {
                    Err(e) => e.code(),
                    Ok(()) => codes::UNKNOWN_TOPIC_OR_PARTITION,
                };
                resp.topics.push(rt);
            }
            continue;
        };
        let from = match &cursor {
            Some((c, p)) if *c == n => usize::try_from(*p).unwrap_or(0),
            _ => 0,
        };
        rt.topic_id = t.id;
        rt.partitions = partitions(image, t, from, remaining);
        let next = from + rt.partitions.len();
        remaining -= rt.partitions.len();
        resp.topics.push(rt);
        if next < t.assignments.len() {
            let mut c = Cursor::default();
            c.topic_name = name(&n);
            c.partition_index = next as i32;
            resp.next_cursor = Some(c);
            break;
        }
    }
    if !all {
        for n in refused {
            let mut rt = DescribeTopicPartitionsResponseTopic::default();
            rt.name = Some(name(&n));
            rt.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
            resp.topics.push(rt);
        }
    }
    resp
}

/// Answers a DescribeTopicPartitions request from this broker's image.
pub fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DescribeTopicPartitionsRequest = frame.decode()?;
    let requested = (!req.topics.is_empty()).then(|| {
        req.topics
            .iter()
            .map(|t| t.name.0.to_string())
            .collect::<Vec<_>>()
    });
    let cursor = req
        .cursor
        .as_ref()
        .map(|c| (c.topic_name.0.to_string(), c.partition_index));
    let image = shard.metadata();
    let access = Access::of(shard, frame);
    let resp = describe(
        &image,
        requested,
        req.response_partition_limit,
        cursor,
        &|n| access.allows(Operation::Describe, ResourceType::Topic, n),
        &|n| access.operations(ResourceType::Topic, n),
    );
    Ok(respond(frame, &resp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::metadata::PartitionRegistration;
    use std::sync::Arc;

    fn image() -> MetadataImage {
        let mut img = MetadataImage::empty("c".into());
        for (n, parts) in [("a", 3), ("b", 2), ("c", 1)] {
            img = img.with_topic(TopicMeta {
                name: Arc::from(n),
                id: uuid::Uuid::new_v4(),
                partitions: parts,
                configs: Default::default(),
                assignments: (0..parts)
                    .map(|_| PartitionRegistration {
                        replicas: vec![1, 2, 3],
                        isr: vec![1],
                        elr: vec![2],
                        last_known_elr: vec![3],
                        leader: 1,
                        leader_epoch: 4,
                        partition_epoch: 5,
                        adding_replicas: vec![],
                        removing_replicas: vec![],
                    })
                    .collect(),
            });
        }
        img
    }

    /// (topic, partition indexes) of each topic, and the next cursor.
    type Shape = (Vec<(String, Vec<i32>)>, Option<(String, i32)>);

    fn shape(r: &DescribeTopicPartitionsResponse) -> Shape {
        (
            r.topics
                .iter()
                .map(|t| {
                    (
                        t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
                        t.partitions.iter().map(|p| p.partition_index).collect(),
                    )
                })
                .collect(),
            r.next_cursor
                .as_ref()
                .map(|c| (c.topic_name.0.to_string(), c.partition_index)),
        )
    }

    fn s(x: &str) -> String {
        x.to_string()
    }

    #[test]
    fn every_topic_with_its_elr_in_name_order() {
        let r = describe(&image(), None, 2000, None, &|_| true, &|_| i32::MIN);
        assert_eq!(
            shape(&r),
            (
                vec![
                    (s("a"), vec![0, 1, 2]),
                    (s("b"), vec![0, 1]),
                    (s("c"), vec![0])
                ],
                None
            )
        );
        let p = &r.topics[0].partitions[0];
        assert_eq!(p.eligible_leader_replicas, Some(vec![BrokerId(2)]));
        assert_eq!(p.last_known_elr, Some(vec![BrokerId(3)]));
        assert_eq!(p.isr_nodes, vec![BrokerId(1)]);
    }

    #[test]
    fn pages_follow_the_cursor() {
        let img = image();
        let r = describe(&img, None, 2, None, &|_| true, &|_| i32::MIN);
        assert_eq!(shape(&r), (vec![(s("a"), vec![0, 1])], Some((s("a"), 2))));
        let r = describe(&img, None, 2, Some((s("a"), 2)), &|_| true, &|_| i32::MIN);
        assert_eq!(
            shape(&r),
            (
                vec![(s("a"), vec![2]), (s("b"), vec![0])],
                Some((s("b"), 1))
            )
        );
        let r = describe(&img, None, 3, Some((s("b"), 1)), &|_| true, &|_| i32::MIN);
        assert_eq!(
            shape(&r),
            (vec![(s("b"), vec![1]), (s("c"), vec![0])], None)
        );
        // A page that ends with a topic points at the next topic.
        let r = describe(&img, None, 3, None, &|_| true, &|_| i32::MIN);
        assert_eq!(
            shape(&r),
            (vec![(s("a"), vec![0, 1, 2])], Some((s("b"), 0)))
        );
    }

    #[test]
    fn named_topics_unknown_ones_with_an_error() {
        let r = describe(
            &image(),
            Some(vec![s("c"), s("zz"), s("a")]),
            2000,
            None,
            &|_| true,
            &|_| i32::MIN,
        );
        assert_eq!(r.topics.len(), 3);
        assert_eq!(
            r.topics[0].name.as_ref().map(|n| n.0.to_string()),
            Some(s("a"))
        );
        assert_eq!(r.topics[2].error_code, codes::UNKNOWN_TOPIC_OR_PARTITION);
        let r = describe(
            &image(),
            Some(vec![s("bad/name")]),
            2000,
            None,
            &|_| true,
            &|_| i32::MIN,
        );
        assert_eq!(r.topics[0].error_code, codes::INVALID_TOPIC_EXCEPTION);
    }
}
