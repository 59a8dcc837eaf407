//! The transactions-v2 scenarios of `tests/transactions_v2.rs` about
//! request versions: writes the coordinator does not know of answered per
//! version, the epoch overflow driven to 32766, and Produce v13 (topic ids).
//! Each runs against Fjord and Kafka 4.4 from the parent's test.

use super::*;

/// Transactional writes the coordinator does not know of, per request
/// version: Kafka 4.4's coordinator answers TRANSACTION_ABORTABLE (120) to a
/// verification of a partition outside the open transaction, and the
/// partition leader passes it on to clients that know it (Produce v11,
/// TxnOffsetCommit v4) and answers INVALID_TXN_STATE (48) to older ones.
pub(super) fn unadded(addr: &str) -> Vec<String> {
    let mut c = Conn::new(addr, "tv-unadded");
    create_topic(&mut c);
    let (pid, e) = init_producer(&mut c, 60_000);
    let mut trace = Vec::new();
    // No transaction is open: Produce without AddPartitionsToTxn.
    trace.push(format!(
        "produce v10: {}",
        c.produce_v(10, pid, e, 0, &["u"])
    ));
    trace.push(format!(
        "produce v11: {}",
        c.produce_v(11, pid, e, 0, &["u"])
    ));
    // The broker-to-coordinator form, verify_only (AddPartitionsToTxn v4).
    let req = kp::AddPartitionsToTxnRequest::default().with_transactions(vec![
        kp::add_partitions_to_txn_request::AddPartitionsToTxnTransaction::default()
            .with_transactional_id(s(&c.id).into())
            .with_producer_id(pid.into())
            .with_producer_epoch(e)
            .with_verify_only(true)
            .with_topics(vec![
                kp::add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                    .with_name(s(TOPIC).into())
                    .with_partitions(vec![0]),
            ]),
    ]);
    let r = c.call(4, &req);
    let code = r
        .results_by_transaction
        .first()
        .and_then(|t| t.topic_results.first())
        .and_then(|t| t.results_by_partition.first())
        .map(|p| p.partition_error_code);
    trace.push(format!("verify only v4: {} {code:?}", r.error_code));
    // An open transaction (Produce v12 adds partition 0) without the
    // group's offsets partition: TxnOffsetCommit without AddOffsetsToTxn.
    trace.push(format!("produce v12: {}", c.produce(pid, e, 0, &["o"])));
    c.until("the group coordinator", |c| {
        let req = kp::FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![s(GROUP)]);
        let r = c.call(4, &req);
        (r.coordinators[0].error_code == 0).then_some(())
    });
    for version in [3, 4] {
        let req = offsets_in_txn(&c.id, pid, e, 1);
        let code = c.until("TxnOffsetCommit", |c| {
            let code = c.call(version, &req).topics[0].partitions[0].error_code;
            (!matches!(code, 14..=16)).then_some(code)
        });
        trace.push(format!("txn offset commit v{version}: {code}"));
    }
    trace.push(format!("abort: {}", c.end_settled(pid, e, false).0));
    trace
}

/// [`unadded`] on Kafka 4.4.
pub(super) const EXPECTED_UNADDED: &[&str] = &[
    "produce v10: 48",
    "produce v11: 120",
    "verify only v4: 0 Some(120)",
    "produce v12: 0",
    "txn offset commit v3: 48",
    "txn offset commit v4: 120",
    "abort: 0",
];

/// The epoch overflow, driven as a client would reach it: InitProducerId
/// bumps the epoch of a known id each time, up to 32766 (Kafka's last
/// usable epoch, `Short.MAX_VALUE - 1`); a transaction at that epoch then
/// commits with EndTxn v5, which cannot bump to 32767 and rotates the
/// producer id (NextProducerId), answering the new id at epoch 0. Its retry
/// with the old id and epoch gets the same answer; the new id carries on.
pub(super) fn overflow(addr: &str) -> Vec<String> {
    const LAST_EPOCH: i16 = i16::MAX - 1;
    let mut c = Conn::new(addr, "tv2-overflow");
    create_topic(&mut c);
    let (pid, mut epoch) = init_producer(&mut c, 60_000);
    let id = c.id.clone();
    let req = kp::InitProducerIdRequest::default()
        .with_transactional_id(Some(s(&id).into()))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id((-1).into())
        .with_producer_epoch(-1);
    let mut same_id = true;
    let deadline = Instant::now() + Duration::from_secs(600);
    while epoch < LAST_EPOCH {
        assert!(Instant::now() < deadline, "epoch {epoch} after 600 s");
        let r = c.call(5, &req);
        match r.error_code {
            0 => {
                same_id &= r.producer_id.0 == pid;
                assert_eq!(r.producer_epoch, epoch + 1, "InitProducerId bumps by one");
                epoch = r.producer_epoch;
            }
            // CONCURRENT_TRANSACTIONS / loading: retried as clients do.
            14 | 51 => std::thread::sleep(Duration::from_millis(10)),
            e => panic!("InitProducerId at epoch {epoch}: {e}"),
        }
    }
    let mut trace = vec![format!("bumped to {epoch}, same id {same_id}")];
    trace.push(format!(
        "produce at {epoch}: {}",
        c.produce(pid, epoch, 0, &["last-epoch"])
    ));
    let rel = |(code, p, e): (i16, i64, i16)| {
        let who = if p == pid { "old id" } else { "new id" };
        format!("{code} {who} e{e}")
    };
    let answer = c.end_settled(pid, epoch, true);
    let new_pid = answer.1;
    trace.push(format!("commit at {epoch}: {}", rel(answer)));
    trace.push(format!(
        "commit retry: {}",
        rel(c.end_txn(pid, epoch, true))
    ));
    let (state, p, e) = c.describe_txn();
    trace.push(format!("describe: {state} new id {} e{e}", p == new_pid));
    // The markers carry the old id at epoch 32767.
    let epochs: Vec<i32> = c
        .describe_producers()
        .iter()
        .filter(|(p, _)| *p == pid)
        .map(|(_, e)| *e)
        .collect();
    trace.push(format!("old id on the partition: {epochs:?}"));
    trace.push(format!(
        "old id produce: {}",
        c.produce(pid, epoch, 1, &["zombie"])
    ));
    trace.push(format!(
        "old id produce 32767: {}",
        c.produce(pid, i16::MAX, 1, &["zombie"])
    ));
    trace.push(format!(
        "unknown id produce: {}",
        c.produce(pid + 12345, 0, 0, &["zombie"])
    ));
    trace.push(format!(
        "new id produce: {}",
        c.produce(new_pid, 0, 0, &["new-id"])
    ));
    trace.push(format!(
        "new id commit: {}",
        rel(c.end_settled(new_pid, 0, true))
    ));
    trace
}

/// [`overflow`] on Kafka 4.4.
pub(super) const EXPECTED_OVERFLOW: &[&str] = &[
    "bumped to 32766, same id true",
    "produce at 32766: 0",
    "commit at 32766: 0 new id e0",
    "commit retry: 0 new id e0",
    "describe: CompleteCommit new id true e0",
    "old id on the partition: [32767]",
    // Below the epoch the partition knows: fenced by the leader itself.
    "old id produce: 47",
    // At it: the coordinator no longer maps the id.
    "old id produce 32767: 49",
    "unknown id produce: 49",
    "new id produce: 0",
    "new id commit: 0 new id e1",
];

/// Produce v13 (KIP-516): the topic named by its id, in a transactions-v2
/// transaction; an id no topic has is UNKNOWN_TOPIC_ID (100); the response
/// answers by id.
pub(super) fn by_topic_id(addr: &str) -> Vec<String> {
    let mut c = Conn::new(addr, "tv2-v13");
    create_topic(&mut c);
    let (pid, e) = init_producer(&mut c, 60_000);
    let req = kp::MetadataRequest::default().with_topics(Some(vec![
        kp::metadata_request::MetadataRequestTopic::default().with_name(Some(s(TOPIC).into())),
    ]));
    let id = c.call(12, &req).topics[0].topic_id;
    let mut trace = Vec::new();
    for (what, topic_id) in [("known id", id), ("unknown id", uuid::Uuid::from_u128(42))] {
        let req = kp::ProduceRequest::default()
            .with_transactional_id(Some(s(&c.id).into()))
            .with_acks(-1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![kp::produce_request::TopicProduceData::default()
                .with_topic_id(topic_id)
                .with_partition_data(vec![
                    kp::produce_request::PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(txn_batch(pid, e, 0, &["by-id"]))),
                ])]);
        let r = c.call(13, &req);
        let t = &r.responses[0];
        trace.push(format!(
            "{what}: {} answered by the same id {}",
            t.partition_responses[0].error_code,
            t.topic_id == topic_id
        ));
    }
    trace.push(format!("commit: {}", c.end_settled(pid, e, true).0));
    trace
}

/// [`by_topic_id`] on Kafka 4.4.
pub(super) const EXPECTED_BY_TOPIC_ID: &[&str] = &[
    "known id: 0 answered by the same id true",
    "unknown id: 100 answered by the same id true",
    "commit: 0",
];
