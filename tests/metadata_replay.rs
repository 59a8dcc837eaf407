//! What a broker does with its partition directories while it replays the
//! metadata log at start-up. openraft re-applies the committed entries in
//! chunks of 64, and every chunk's image used to reach the shards: images of
//! the past, in which a topic may still have an earlier id or not exist yet.
//! A directory on disk belongs to the topic id in its `partition.metadata`;
//! a shard opens it only for that id, and deletes it only for a record that
//! deleted that id.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::message::Message;
use rdkafka::producer::FutureRecord;
use rdkafka::Offset;

/// More controller writes than openraft re-applies in one chunk (64), so
/// that a restart publishes an image from between two of them.
const PADDING_WRITES: usize = 70;

async fn produce(broker: &Broker, topic: &str, values: &[String]) {
    let producer = broker.producer(&[("acks", "all")]);
    for v in values {
        producer
            .send(
                FutureRecord::<(), _>::to(topic).partition(0).payload(v),
                Duration::from_secs(10),
            )
            .await
            .expect("acknowledged");
    }
}

async fn pad_metadata_log(broker: &Broker, writes: usize) {
    let admin = broker.admin();
    for i in 0..writes {
        let name = format!("pad-{i}");
        let r = admin
            .create_topics(
                &[NewTopic::new(&name, 1, TopicReplication::Fixed(1))],
                &admin_opts(),
            )
            .await
            .expect("CreateTopics");
        assert!(r[0].is_ok(), "{r:?}");
    }
}

fn read_values(broker: &Broker, topic: &str, expect: usize) -> Vec<String> {
    let consumer = broker.assigned_consumer(topic, &[0], Offset::Beginning);
    let msgs = consume_n(&consumer, expect, Duration::from_secs(20));
    assert_no_more(&consumer, Duration::from_millis(500));
    msgs.iter()
        .map(|m| String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned())
        .collect()
}

/// A topic deleted and created again under the same name keeps its new
/// records across restarts (clean and kill -9): the replayed image in which
/// the name still has its first id neither opens the new directory as the
/// old topic nor deletes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recreated_topic_keeps_its_records_across_restarts() {
    let mut broker = Broker::start();
    let topic = "reborn";
    broker.create_topic(topic, 1).await;
    produce(&broker, topic, &["first life".to_string()]).await;
    // Chunk boundaries fall between the first creation and the deletion.
    pad_metadata_log(&broker, PADDING_WRITES).await;
    let admin = broker.admin();
    let r = admin
        .delete_topics(&[topic], &admin_opts())
        .await
        .expect("DeleteTopics");
    assert!(r[0].is_ok(), "{r:?}");
    wait_for(Duration::from_secs(10), "the directory to go", || {
        !broker.data_dir().join(format!("{topic}-0")).exists()
    });
    broker.create_topic(topic, 1).await;
    let values: Vec<String> = (0..10).map(|i| format!("second life {i}")).collect();
    produce(&broker, topic, &values).await;
    assert_eq!(read_values(&broker, topic, values.len()), values);

    broker.restart();
    assert_eq!(
        read_values(&broker, topic, values.len()),
        values,
        "after a clean restart"
    );
    broker.kill9();
    broker.restart();
    assert_eq!(
        read_values(&broker, topic, values.len()),
        values,
        "after kill -9 and a restart"
    );
    let log = broker.stderr_text();
    assert!(
        !log.contains("refusing to delete"),
        "no unexplained deletion was attempted:\n{log}"
    );
}
