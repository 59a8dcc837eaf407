//! Partition leaders' adds (transactions v2, KIP-890 part 2) for one
//! transactional id joined on its coordinator (`fjord::txn::leader_add`),
//! in a broker with two shards inside this test process (`harness`): the
//! owners of a Produce v12's partitions on both shards ask the coordinator
//! to add them at the same moment, as the partitions' owners do
//! (`txn::verify::verify_partitions` with `add`), and one
//! `__transaction_state` record holds them all. The coordinator holds the
//! id's writes (`TransactionCoordinator::hold_leader_adds`) until both adds
//! are queued, so the scenario does not depend on timing.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The handlers' futures nest as deeply as in the crate (see src/lib.rs).
#![recursion_limit = "256"]

// Not every helper of the shared harness is used here.
#[allow(unused_imports)]
mod harness;

use std::collections::BTreeSet;
use std::sync::Arc;

use fjord::shard::error::VerificationError;
use fjord::txn::coordinator::{self, partition_for_transactional_id, TransactionCoordinator};
use fjord::txn::records::{TxnLogValue, TxnStatus, TxnVersion};
use fjord::txn::TRANSACTION_STATE_TOPIC;
use harness::*;

const INVALID_PRODUCER_EPOCH: i16 = 47;
const CONCURRENT_TRANSACTIONS: i16 = 51;
const PRODUCER_FENCED: i16 = 90;

/// The topic whose partitions' opens are held in this process
/// (`FJORD_FAULT_OPEN_HOLD`, src/shard/fault.rs): a marker for it cannot be
/// written until the test releases it.
const HELD_TOPIC: &str = "held-open";

/// Sets the process's fault injection before any node of this file starts
/// (each test calls it first; it is read once, at the first open).
fn setup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::env::set_var("FJORD_FAULT_OPEN_HOLD", HELD_TOPIC));
}

/// `__transaction_state` with 4 partitions.
const SETTINGS: &[&str] = &[
    "offsets.topic.num.partitions=4",
    "transaction.state.log.num.partitions=4",
];

/// A partition of `topic` (with `partitions` partitions) owned by each of
/// the node's two shards.
fn one_per_shard(node: &Node, topic: &str, partitions: i32) -> [i32; 2] {
    let t = topic.to_string();
    let owners: Vec<usize> = node.on(0, move |s| async move {
        (0..partitions).map(|p| s.owner(&t, p)).collect()
    });
    let on = |shard: usize| {
        owners
            .iter()
            .position(|o| *o == shard)
            .unwrap_or_else(|| panic!("no partition of {topic} on shard {shard}: {owners:?}"))
            as i32
    };
    [on(0), on(1)]
}

/// The partition owner's add on `shard`, as Produce v12 makes it (started,
/// not waited for): the code of its answer.
fn owner_add(
    node: &Node,
    shard: usize,
    id: &str,
    (pid, epoch): (i64, i16),
    topic: &str,
    partition: i32,
) -> Pending<i16> {
    let (id, topic): (Arc<str>, Arc<str>) = (id.into(), topic.into());
    node.spawn_on(shard, move |s| async move {
        let answers = fjord::txn::verify::verify_partitions(
            s,
            id,
            pid,
            epoch,
            vec![(topic, partition)],
            true,
        )
        .await;
        assert_eq!(answers.len(), 1, "{answers:?}");
        answers[0]
            .as_ref()
            .map_or_else(VerificationError::code, |()| 0)
    })
}

/// The `__transaction_state` records of `id` from `offset` on.
fn state_records(node: &Node, id: &str, offset: i64) -> Vec<TxnLogValue> {
    let partition = partition_for_transactional_id(id, 4);
    let (_, bytes) = node.fetch(TRANSACTION_STATE_TOPIC, partition, offset, 0);
    let mut b = bytes;
    let mut out = Vec::new();
    for batch in kafka_protocol::records::RecordBatchDecoder::decode_all(&mut b).unwrap() {
        for r in batch.records {
            let (rid, value) =
                fjord::txn::records::decode(r.key.as_ref().unwrap(), r.value.as_ref()).unwrap();
            if rid == id {
                out.push(value.expect("not a tombstone"));
            }
        }
    }
    out
}

/// The high watermark of `id`'s `__transaction_state` partition.
fn state_end(node: &Node, id: &str) -> i64 {
    node.watermarks(
        TRANSACTION_STATE_TOPIC,
        partition_for_transactional_id(id, 4),
    )
    .1
}

/// Holds `id`'s leader adds on its coordinator until `queued` are queued,
/// then lets them be written.
fn hold_until_queued(node: &Node, id: &str, queued: usize, start: impl FnOnce()) {
    let c = node.txn_shard(id);
    let held = id.to_string();
    node.on(c, move |_| async move {
        TransactionCoordinator::here().hold_leader_adds(&held);
    });
    start();
    node.wait_until(&format!("{queued} leader adds queued for {id}"), || {
        let id = id.to_string();
        node.on(c, move |_| async move {
            TransactionCoordinator::here().queued_leader_adds(&id)
        }) == queued
    });
    let held = id.to_string();
    node.on(c, move |_| async move {
        TransactionCoordinator::here().release_leader_adds(&held);
    });
}

fn parts(topic: &str, ps: &[i32]) -> BTreeSet<(String, i32)> {
    ps.iter().map(|p| (topic.to_string(), *p)).collect()
}

/// Two owners (one per shard) add their partitions for one transactional id
/// at the same moment: both are answered NONE, and one
/// `__transaction_state` record (Ongoing, transactions v2) holds both
/// partitions.
#[test]
fn adds_from_two_shards_are_one_record() {
    setup();
    let node = Node::start(SETTINGS);
    let topic = "joined";
    node.create_topic(topic, 4, &[]);
    node.txn_ready();
    let id = "joined-tx";
    let producer = node.init_producer_id(id, 60_000);
    let [p0, p1] = one_per_shard(&node, topic, 4);
    let before = state_end(&node, id);

    let mut adds = Vec::new();
    hold_until_queued(&node, id, 2, || {
        adds.push(owner_add(&node, 0, id, producer, topic, p0));
        adds.push(owner_add(&node, 1, id, producer, topic, p1));
    });
    let answers: Vec<i16> = adds.into_iter().map(|a| a.wait(&node)).collect();
    assert_eq!(answers, vec![0, 0], "both owners' adds");

    assert_eq!(state_end(&node, id), before + 1, "one record appended");
    let written = state_records(&node, id, before);
    assert_eq!(written.len(), 1, "{written:?}");
    let v = &written[0];
    assert_eq!(v.status, TxnStatus::Ongoing);
    assert_eq!(v.partitions, parts(topic, &[p0, p1]));
    assert_eq!((v.producer_id, v.producer_epoch), producer);
    assert_eq!(v.tagged.client_tv, TxnVersion::Tv2);
    let d = node.describe_txn(id);
    assert_eq!(d.state, "Ongoing", "{d:?}");

    // The next adds name partitions already in the transaction: answered
    // without a record.
    let again = owner_add(&node, 1, id, producer, topic, p0).wait(&node);
    assert_eq!(again, 0);
    assert_eq!(state_end(&node, id), before + 1, "nothing more appended");
}

/// A fenced producer's add joined with the current producer's: the
/// current one is answered NONE and its partition is added; the fenced
/// ones get their own errors (INVALID_PRODUCER_EPOCH through a partition
/// owner, as Kafka's leaders map PRODUCER_FENCED; PRODUCER_FENCED from the
/// coordinator, as AddPartitionsToTxn v4+ answers it) and add nothing.
#[test]
fn a_fenced_add_joined_with_a_current_one_gets_its_own_error() {
    setup();
    let node = Node::start(SETTINGS);
    let topic = "fenced-joined";
    node.create_topic(topic, 4, &[]);
    node.txn_ready();
    let id = "fenced-joined-tx";
    let (pid, old) = node.init_producer_id(id, 60_000);
    let (pid2, current) = node.init_producer_id(id, 60_000);
    assert_eq!(pid2, pid);
    assert!(current > old);
    let [p0, p1] = one_per_shard(&node, topic, 4);
    let other = (0..4).find(|p| ![p0, p1].contains(p)).unwrap();
    let c = node.txn_shard(id);
    let before = state_end(&node, id);

    let mut adds = Vec::new();
    let mut direct = None;
    hold_until_queued(&node, id, 3, || {
        adds.push(owner_add(&node, 0, id, (pid, old), topic, p0));
        adds.push(owner_add(&node, 1, id, (pid, current), topic, p1));
        let (tid, t) = (id.to_string(), topic.to_string());
        direct = Some(node.spawn_on(c, move |s| async move {
            coordinator::add_partitions_for_leader(s, tid, pid, old, vec![(t, other)])
                .await
                .map_or_else(|e| e.code(), |()| 0)
        }));
    });
    let answers: Vec<i16> = adds.into_iter().map(|a| a.wait(&node)).collect();
    assert!(
        [INVALID_PRODUCER_EPOCH, PRODUCER_FENCED].contains(&answers[0]),
        "the fenced owner's add: {answers:?}"
    );
    assert_eq!(answers[1], 0, "the current owner's add: {answers:?}");
    assert_eq!(direct.unwrap().wait(&node), PRODUCER_FENCED);

    assert_eq!(state_end(&node, id), before + 1, "one record appended");
    let written = state_records(&node, id, before);
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0].partitions, parts(topic, &[p1]));
    assert_eq!(written[0].producer_epoch, current);
}

/// The code of a partition leader's add on the coordinator, and how long it
/// took.
fn leader_add(
    node: &Node,
    id: &str,
    (pid, epoch): (i64, i16),
    partition: (&str, i32),
) -> (i16, std::time::Duration) {
    let (id, topic) = (id.to_string(), partition.0.to_string());
    let p = partition.1;
    let started = std::time::Instant::now();
    let code = node.on(node.txn_shard(&id), move |s| async move {
        coordinator::add_partitions_for_leader(s, id, pid, epoch, vec![(topic, p)])
            .await
            .map_or_else(|e| e.code(), |()| 0)
    });
    (code, started.elapsed())
}

/// While the markers of a commit cannot be written (the id in
/// PrepareCommit, another operation's), a leader's add waits
/// `LEADER_ADD_RETRY_MS` and then answers CONCURRENT_TRANSACTIONS, which
/// clients retry; a fenced add is answered its own error at once. Once the
/// markers are written, the add opens the next transaction.
#[test]
fn an_add_waits_for_markers_then_answers_concurrent_transactions() {
    setup();
    let node = Node::start(SETTINGS);
    let topic = "after-markers";
    node.create_topic(topic, 1, &[]);
    node.txn_ready();
    // Created without waiting for it: its opening is held.
    let reply = node.controller(fjord::cluster::control::ControllerRequest::CreateTopics {
        topics: vec![fjord::cluster::control::NewTopic {
            name: HELD_TOPIC.to_string(),
            partitions: 1,
            replication_factor: 1,
            assignments: None,
            topic_id: None,
            configs: Default::default(),
        }],
        validate_only: false,
    });
    assert!(
        matches!(&reply, fjord::cluster::control::ControllerReply::CreateTopics(r) if r.iter().all(Result::is_ok)),
        "{reply:?}"
    );
    node.wait_until("the held partition opening on its owner", || {
        node.on(0, |s| async move {
            let owner = s.owner(HELD_TOPIC, 0);
            s.invoke_on(owner, |o| async move { o.is_opening(HELD_TOPIC, 0) })
                .await
                .unwrap_or(false)
        })
    });
    let id = "after-markers-tx";
    let (pid, epoch) = node.init_producer_id(id, 60_000);
    assert_eq!(node.add_partitions(id, pid, epoch, &[(HELD_TOPIC, 0)]), 0);
    assert_eq!(node.end_txn(id, pid, epoch, true), 0);
    assert_eq!(node.describe_txn(id).state, "PrepareCommit");

    let (code, took) = leader_add(&node, id, (pid, epoch), (topic, 0));
    assert_eq!(code, CONCURRENT_TRANSACTIONS);
    assert!(
        took >= std::time::Duration::from_millis(coordinator::LEADER_ADD_RETRY_MS),
        "answered after {took:?}"
    );
    let (code, _) = leader_add(&node, id, (pid, epoch - 1), (topic, 0));
    assert_eq!(code, PRODUCER_FENCED, "a fenced add");

    std::fs::write(
        node.data_dir()
            .join(format!("fault-release-open-{HELD_TOPIC}")),
        b"",
    )
    .unwrap();
    node.poll("the commit's markers written", || {
        let d = node.describe_txn(id);
        (d.state == "CompleteCommit")
            .then_some(())
            .ok_or(format!("{d:?}"))
    });
    let (code, _) = leader_add(&node, id, (pid, epoch), (topic, 0));
    assert_eq!(code, 0);
    let d = node.describe_txn(id);
    assert_eq!(d.state, "Ongoing", "{d:?}");
}
