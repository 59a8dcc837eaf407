//! In-process start-up of a single-voter quorum on a glommio executor: what
//! a node's shards are given while it replays its metadata log.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::state_machine::Publish;
use super::types::MetadataEntry;
use super::{Quorum, QuorumSettings};
use crate::cluster::metadata::{MetadataImage, PartitionRegistration};
use crate::cluster::records::MetadataRecord;

fn settings(dir: &std::path::Path) -> QuorumSettings {
    QuorumSettings {
        node_id: 1,
        cluster_id: "start-test".into(),
        data_dir: dir.to_path_buf(),
        voters: vec![(1, String::new())],
        election_timeout: Duration::from_millis(300),
        session_timeout: Duration::from_secs(9),
        heartbeat_interval: Duration::from_secs(2),
        request_timeout: Duration::from_secs(5),
        endpoints: Vec::new(),
        rack: None,
        voter: true,
        leader_rebalance_every: None,
        election: Default::default(),
        previous_broker_epoch: None,
        controller_client: crate::security::ClientSecurity::plaintext("CONTROLLER"),
        controller_listener: None,
        super_users: Vec::new(),
        bootstrap_scram: Vec::new(),
    }
}

/// A sink that records every image a shard would be given.
fn recording() -> (Publish, Rc<RefCell<Vec<Arc<MetadataImage>>>>) {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s = seen.clone();
    let sink: Publish = Rc::new(move |img| {
        let s = s.clone();
        Box::pin(async move { s.borrow_mut().push(img) })
    });
    (sink, seen)
}

fn topic(name: &str, id: Uuid) -> Vec<MetadataRecord> {
    vec![
        MetadataRecord::Topic {
            name: name.into(),
            topic_id: id,
        },
        MetadataRecord::Partition {
            topic_id: id,
            partition_id: 0,
            registration: PartitionRegistration {
                replicas: vec![1],
                isr: vec![1],
                elr: vec![],
                last_known_elr: vec![],
                leader: 1,
                leader_epoch: 0,
                partition_epoch: 0,
                adding_replicas: vec![],
                removing_replicas: vec![],
            },
        },
    ]
}

async fn write(q: &Quorum, records: Vec<MetadataRecord>) -> u64 {
    let raft = q.raft.as_ref().unwrap();
    raft.client_write(MetadataEntry { records })
        .await
        .unwrap()
        .log_id
        .index
}

async fn until_leader(q: &Quorum) {
    for _ in 0..200 {
        if q.is_leader() {
            return;
        }
        glommio::timer::sleep(Duration::from_millis(20)).await;
    }
    panic!("no leader");
}

/// The log a restart replays in several chunks: a topic created, more than
/// 64 entries, the topic deleted and created again under a new id. While
/// the node replays it, its shards are given nothing; the first image they
/// get is the one it caught up to, in which the name has its second id.
#[test]
fn shards_get_no_image_of_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    let ex = glommio::LocalExecutor::default();
    let last = ex.run({
        let dir = dir.path().to_path_buf();
        async move {
            let (sink, _) = recording();
            let q = Quorum::start(settings(&dir), sink).await.unwrap();
            q.wait_recovered(Duration::from_secs(10)).await;
            until_leader(&q).await;
            write(&q, topic("t", first)).await;
            for n in 0..70 {
                write(
                    &q,
                    vec![MetadataRecord::ProducerIds {
                        broker_id: 1,
                        broker_epoch: 1,
                        next_producer_id: 1000 * (n + 1),
                    }],
                )
                .await;
            }
            let removed = write(&q, vec![MetadataRecord::RemoveTopic { topic_id: first }]).await;
            let last = write(&q, topic("t", second)).await;
            assert_eq!(q.image().removed_topics[&first].offset, removed);
            q.stop().await;
            last
        }
    });
    let ex = glommio::LocalExecutor::default();
    ex.run({
        let dir = dir.path().to_path_buf();
        async move {
            let (sink, seen) = recording();
            let q = Quorum::start(settings(&dir), sink).await.unwrap();
            assert!(
                seen.borrow().is_empty(),
                "images of the replay reached the shards: {:?}",
                seen.borrow().iter().map(|i| i.offset).collect::<Vec<_>>()
            );
            q.wait_recovered(Duration::from_secs(10)).await;
            let seen = seen.borrow().clone();
            let first_seen = seen.first().expect("an image after recovery");
            assert!(first_seen.offset >= last, "{} < {last}", first_seen.offset);
            assert_eq!(first_seen.topic("t").map(|t| t.id), Some(second));
            assert!(first_seen.removed_topics.contains_key(&first));
            for w in seen.windows(2) {
                assert!(w[1].offset >= w[0].offset && w[1].version > w[0].version);
            }
            q.stop().await;
        }
    });
}
