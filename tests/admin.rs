//! Topic administration through rdkafka's AdminClient: create, create
//! partitions, delete, and their effect on metadata and on the data directory.
//! (DescribeCluster is not exposed by rdkafka, so it is not covered here.)

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use rdkafka::admin::{NewPartitions, NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::message::Message;
use rdkafka::producer::FutureRecord;
use rdkafka::Offset;

fn listed_topics(c: &BaseConsumer) -> Vec<String> {
    c.fetch_metadata(None, CLIENT_TIMEOUT)
        .expect("metadata")
        .topics()
        .iter()
        .map(|t| t.name().to_string())
        .collect()
}

fn partition_dirs(broker: &Broker, topic: &str) -> Vec<String> {
    let prefix = format!("{topic}-");
    let mut v: Vec<String> = std::fs::read_dir(broker.data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.strip_prefix(&prefix)
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    v.sort();
    v
}

fn any_dir_mentions(broker: &Broker, topic: &str) -> Vec<String> {
    std::fs::read_dir(broker.data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("{topic}-")))
        .collect()
}

async fn produce_one(broker: &Broker, topic: &str, partition: i32, value: &str) -> i64 {
    let producer = broker.producer(&[("acks", "all")]);
    producer
        .send(
            FutureRecord::to(topic)
                .partition(partition)
                .key("k")
                .payload(value),
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|(e, _)| panic!("produce to {topic}-{partition}: {e}"))
        .offset
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_grow_and_delete_topic() {
    let broker = Broker::start();
    let admin = broker.admin();
    let c = broker.consumer(&[]);
    let topic = "managed";

    // Create.
    let res = admin
        .create_topics(
            &[NewTopic::new(topic, 2, TopicReplication::Fixed(1))],
            &admin_opts(),
        )
        .await
        .expect("CreateTopics");
    assert_eq!(res, vec![Ok(topic.to_string())]);
    wait_for(CLIENT_TIMEOUT, "topic with 2 partitions", || {
        partition_count(&c, topic) == Some(2)
    });
    assert_eq!(
        partition_dirs(&broker, topic),
        vec!["managed-0", "managed-1"]
    );
    // The topic is a record of the metadata log.
    let log = broker
        .data_dir()
        .join("__cluster_metadata-0")
        .join("quorum.log");
    let text = String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()).to_string();
    assert!(
        text.contains(&format!("\"name\":\"{topic}\"")),
        "no Topic record for {topic} in {}",
        log.display()
    );

    // Creating it again fails.
    let res = admin
        .create_topics(
            &[NewTopic::new(topic, 2, TopicReplication::Fixed(1))],
            &admin_opts(),
        )
        .await
        .expect("CreateTopics");
    assert_eq!(
        res,
        vec![Err((
            topic.to_string(),
            RDKafkaErrorCode::TopicAlreadyExists
        ))]
    );

    assert_eq!(produce_one(&broker, topic, 1, "before growing").await, 0);

    // Grow to 5 partitions.
    let res = admin
        .create_partitions(&[NewPartitions::new(topic, 5)], &admin_opts())
        .await
        .expect("CreatePartitions");
    assert_eq!(res, vec![Ok(topic.to_string())]);
    wait_for(CLIENT_TIMEOUT, "topic with 5 partitions", || {
        partition_count(&c, topic) == Some(5)
    });
    assert_eq!(
        partition_dirs(&broker, topic),
        vec![
            "managed-0",
            "managed-1",
            "managed-2",
            "managed-3",
            "managed-4"
        ]
    );
    // Existing data is untouched and the new partitions are usable.
    assert_eq!(watermarks(&c, topic, 1), (0, 1));
    assert_eq!(
        produce_one(&broker, topic, 4, "in a new partition").await,
        0
    );
    let consumer = broker.assigned_consumer(topic, &[1, 4], Offset::Beginning);
    let mut got: Vec<(i32, Vec<u8>)> = consume_n(&consumer, 2, Duration::from_secs(30))
        .iter()
        .map(|m| (m.partition(), m.payload().unwrap().to_vec()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            (1, b"before growing".to_vec()),
            (4, b"in a new partition".to_vec())
        ]
    );
    drop(consumer);

    // Shrinking or keeping the count is refused.
    for n in [5, 3] {
        let res = admin
            .create_partitions(&[NewPartitions::new(topic, n)], &admin_opts())
            .await
            .expect("CreatePartitions");
        assert_eq!(
            res,
            vec![Err((
                topic.to_string(),
                RDKafkaErrorCode::InvalidPartitions
            ))],
            "CreatePartitions to {n}"
        );
    }
    assert_eq!(partition_count(&c, topic), Some(5));

    // Delete.
    let res = admin
        .delete_topics(&[topic], &admin_opts())
        .await
        .expect("DeleteTopics");
    assert_eq!(res, vec![Ok(topic.to_string())]);
    wait_for(CLIENT_TIMEOUT, "topic gone from metadata", || {
        !listed_topics(&c).iter().any(|t| t == topic)
    });
    wait_for(CLIENT_TIMEOUT, "partition directories removed", || {
        any_dir_mentions(&broker, topic).is_empty()
    });
    let text = String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()).to_string();
    assert!(
        text.contains("RemoveTopic"),
        "no RemoveTopic record in {}",
        log.display()
    );

    // Deleting again: unknown topic.
    let res = admin
        .delete_topics(&[topic], &admin_opts())
        .await
        .expect("DeleteTopics");
    assert_eq!(
        res,
        vec![Err((
            topic.to_string(),
            RDKafkaErrorCode::UnknownTopicOrPartition
        ))]
    );

    // The name can be reused; the new topic starts empty.
    broker.create_topic(topic, 1).await;
    assert_eq!(
        watermarks(&c, topic, 0),
        (0, 0),
        "re-created topic is empty"
    );
    assert_eq!(produce_one(&broker, topic, 0, "second life").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_partitions_for_unknown_topic_fails() {
    let broker = Broker::start();
    let admin = broker.admin();
    let res = admin
        .create_partitions(&[NewPartitions::new("nowhere", 3)], &admin_opts())
        .await
        .expect("CreatePartitions");
    assert_eq!(
        res,
        vec![Err((
            "nowhere".to_string(),
            RDKafkaErrorCode::UnknownTopicOrPartition
        ))]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_topics_in_one_request() {
    let broker = Broker::start();
    let admin = broker.admin();
    let names: Vec<String> = (0..10).map(|i| format!("batch-{i}")).collect();
    let new: Vec<NewTopic<'_>> = names
        .iter()
        .enumerate()
        .map(|(i, n)| NewTopic::new(n, 1 + (i as i32 % 3), TopicReplication::Fixed(1)))
        .collect();
    let res = admin
        .create_topics(&new, &admin_opts())
        .await
        .expect("CreateTopics");
    assert!(res.iter().all(|r| r.is_ok()), "{res:?}");
    let c = broker.consumer(&[]);
    for (i, n) in names.iter().enumerate() {
        wait_for(CLIENT_TIMEOUT, n, || {
            partition_count(&c, n) == Some(1 + i % 3)
        });
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let res = admin
        .delete_topics(&refs, &admin_opts())
        .await
        .expect("DeleteTopics");
    assert!(res.iter().all(|r| r.is_ok()), "{res:?}");
    wait_for(CLIENT_TIMEOUT, "all deleted", || {
        let listed = listed_topics(&c);
        names.iter().all(|n| !listed.contains(n))
    });
    wait_for(CLIENT_TIMEOUT, "all directories removed", || {
        names
            .iter()
            .all(|n| any_dir_mentions(&broker, n).is_empty())
    });
}
