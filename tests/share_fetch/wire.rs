//! Raw frames of the share_fetch tests: topics, produce, the share.version
//! feature, the ShareGroupHeartbeat join, and ShareFetch/ShareAcknowledge
//! requests.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use uuid::Uuid;

use super::common::kafka_peer::KafkaPeer;
use super::common::now_ms;
use super::common::raw::RawConn as Conn;

pub(crate) fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A broker under test.
pub(crate) struct Target {
    /// `host:port`.
    pub(crate) addr: String,
}

pub(crate) fn create_topic(addr: &str, topic: &str, partitions: i32) -> Uuid {
    create_topic_with_configs(addr, topic, partitions, &[])
}

/// Creates `topic` with `partitions` (replication factor 1) and the topic
/// `configs` (name, value); waits until every partition has a leader.
/// Gives its id.
pub(crate) fn create_topic_with_configs(
    addr: &str,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) -> Uuid {
    let mut c = Conn::new(addr);
    let configs = configs
        .iter()
        .map(|(k, v)| {
            create_topics_request::CreatableTopicConfig::default()
                .with_name(s(k))
                .with_value(Some(s(v)))
        })
        .collect();
    let req = CreateTopicsRequest::default()
        .with_topics(vec![create_topics_request::CreatableTopic::default()
            .with_name(s(topic).into())
            .with_num_partitions(partitions)
            .with_replication_factor(1)
            .with_configs(configs)])
        .with_timeout_ms(30_000);
    let r = c.call(7, &req);
    let t = &r.topics[0];
    assert_eq!(t.error_code, 0, "create {topic}: {:?}", t.error_message);
    // Wait until the metadata names it with a leader.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = c.call(
            12,
            &MetadataRequest::default().with_topics(Some(vec![
                metadata_request::MetadataRequestTopic::default().with_name(Some(s(topic).into())),
            ])),
        );
        let ok = m.topics.iter().any(|t| {
            t.error_code == 0
                && t.partitions.len() == partitions as usize
                && t.partitions.iter().all(|p| p.leader_id.0 >= 0)
        });
        if ok {
            return m.topics[0].topic_id;
        }
        assert!(Instant::now() < deadline, "{topic} has no leader");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One uncompressed batch of `values`.
pub(crate) fn batch(values: &[&str]) -> Bytes {
    let keyed: Vec<(Option<&str>, &str)> = values.iter().map(|v| (None, *v)).collect();
    keyed_batch(&keyed)
}

/// One uncompressed batch of (key, value) records.
pub(crate) fn keyed_batch(records: &[(Option<&str>, &str)]) -> Bytes {
    let now = now_ms();
    let records: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: -1 + i as i32,
            timestamp: now,
            key: k.map(|k| Bytes::copy_from_slice(k.as_bytes())),
            value: Some(Bytes::copy_from_slice(v.as_bytes())),
            headers: Default::default(),
        })
        .collect();
    let mut buf = bytes::BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .expect("encode a record batch");
    buf.freeze()
}

/// Produces `values` as one batch; gives its base offset.
pub(crate) fn produce(addr: &str, topic: &str, partition: i32, values: &[&str]) -> i64 {
    produce_batch(addr, topic, partition, batch(values))
}

/// Produces one encoded batch (acks=-1); gives its base offset.
pub(crate) fn produce_batch(addr: &str, topic: &str, partition: i32, records: Bytes) -> i64 {
    let mut c = Conn::new(addr);
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(s(topic).into())
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(records)),
            ])]);
    // A topic just created may not be led yet where the request lands
    // (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER): retried.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c.call(9, &req);
        let p = &r.responses[0].partition_responses[0];
        if [3, 6].contains(&p.error_code) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        assert_eq!(p.error_code, 0, "produce to {topic}-{partition}");
        return p.base_offset;
    }
}

/// Finalizes share.version=1 where it is below 1 (a no-op on a new
/// cluster, which finalizes 2).
pub(crate) fn enable_share(addr: &str) {
    let mut c = Conn::new(addr);
    // A broker just started may not list its finalized features yet.
    let versions = ApiVersionsRequest::default()
        .with_client_software_name(s("fjord-share-test"))
        .with_client_software_version(s("1"));
    let mut v = c.call(4, &versions);
    let deadline = Instant::now() + Duration::from_secs(20);
    while v.finalized_features.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        v = c.call(4, &versions);
    }
    let level = v
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "share.version")
        .map_or(0, |f| f.max_version_level);
    if level >= 1 {
        return;
    }
    let req = UpdateFeaturesRequest::default()
        .with_timeout_ms(30_000)
        .with_feature_updates(vec![update_features_request::FeatureUpdateKey::default()
            .with_feature(s("share.version"))
            .with_max_version_level(1)
            .with_upgrade_type(1)]);
    let r = c.call(1, &req);
    assert_eq!(
        r.error_code, 0,
        "UpdateFeatures share.version=1: {:?}",
        r.error_message
    );
}

/// Joins `group` as a new share member subscribed to `topics` with
/// ShareGroupHeartbeat v1 and waits until it is assigned something; gives
/// its member id.
pub(crate) fn join(t: &Target, group: &str, topics: &[&str]) -> String {
    let member = Uuid::new_v4().to_string();
    let mut c = Conn::new(&t.addr);
    let mut epoch = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // Kafka creates `__consumer_offsets` on the first FindCoordinator.
        let f = c.call(
            4,
            &FindCoordinatorRequest::default()
                .with_key_type(0)
                .with_coordinator_keys(vec![s(group)]),
        );
        if f.coordinators.first().is_some_and(|x| x.error_code != 0) {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        let req = ShareGroupHeartbeatRequest::default()
            .with_group_id(s(group).into())
            .with_member_id(s(&member))
            .with_member_epoch(epoch)
            .with_subscribed_topic_names(
                (epoch == 0).then(|| topics.iter().map(|n| s(n).into()).collect()),
            );
        let r = c.call(1, &req);
        if r.error_code == 0 {
            epoch = r.member_epoch;
            if r.assignment
                .as_ref()
                .is_some_and(|a| !a.topic_partitions.is_empty())
            {
                return member;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{group}: no assignment (last code {})",
            r.error_code
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Acknowledgement batches: (first, last, type).
pub(crate) type Acks = Vec<(i64, i64, i8)>;

pub(crate) fn ack_batches_fetch(acks: &Acks) -> Vec<share_fetch_request::AcknowledgementBatch> {
    acks.iter()
        .map(|(f, l, t)| {
            share_fetch_request::AcknowledgementBatch::default()
                .with_first_offset(*f)
                .with_last_offset(*l)
                .with_acknowledge_types(vec![*t])
        })
        .collect()
}

/// A ShareFetch of one partition.
#[allow(clippy::too_many_arguments)]
pub(crate) fn share_fetch_req(
    group: &str,
    member: &str,
    epoch: i32,
    topic_id: Uuid,
    partition: i32,
    acks: &Acks,
    max_wait_ms: i32,
    max_records: i32,
) -> ShareFetchRequest {
    ShareFetchRequest::default()
        .with_group_id(Some(s(group).into()))
        .with_member_id(Some(s(member)))
        .with_share_session_epoch(epoch)
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_max_records(max_records)
        .with_batch_size(max_records)
        .with_topics(vec![share_fetch_request::FetchTopic::default()
            .with_topic_id(topic_id)
            .with_partitions(vec![
                share_fetch_request::FetchPartition::default()
                    .with_partition_index(partition)
                    .with_partition_max_bytes(1 << 20)
                    .with_acknowledgement_batches(ack_batches_fetch(acks)),
            ])])
}

pub(crate) fn share_ack_req(
    group: &str,
    member: &str,
    epoch: i32,
    topic_id: Uuid,
    partition: i32,
    acks: &Acks,
) -> ShareAcknowledgeRequest {
    ShareAcknowledgeRequest::default()
        .with_group_id(Some(s(group).into()))
        .with_member_id(Some(s(member)))
        .with_share_session_epoch(epoch)
        .with_topics(vec![share_acknowledge_request::AcknowledgeTopic::default()
            .with_topic_id(topic_id)
            .with_partitions(vec![
                share_acknowledge_request::AcknowledgePartition::default()
                    .with_partition_index(partition)
                    .with_acknowledgement_batches(
                        acks.iter()
                            .map(|(f, l, t)| {
                                share_acknowledge_request::AcknowledgementBatch::default()
                                    .with_first_offset(*f)
                                    .with_last_offset(*l)
                                    .with_acknowledge_types(vec![*t])
                            })
                            .collect(),
                    ),
            ])])
}

pub(crate) fn kafka_target(settings: &[&str]) -> Option<(KafkaPeer, Target)> {
    let peer = KafkaPeer::start(settings)?;
    let t = Target {
        addr: peer.addr.clone(),
    };
    Some((peer, t))
}

/// A transaction on one partition written with raw frames (InitProducerId,
/// AddPartitionsToTxn v3, a transactional Produce, EndTxn), for the cases
/// that need transaction markers and aborted records in a share-partition.
#[allow(dead_code)]
pub(crate) struct RawTxn {
    c: Conn,
    txn: String,
    topic: String,
    pid: i64,
    epoch: i16,
}

#[allow(dead_code)]
impl RawTxn {
    /// Initializes `txn`'s producer id (retried while the transaction
    /// coordinator loads) and adds partition 0 of `topic`.
    pub(crate) fn begin(addr: &str, txn: &str, topic: &str) -> RawTxn {
        let mut c = Conn::new(addr);
        let deadline = Instant::now() + Duration::from_secs(30);
        let (pid, epoch) = loop {
            let _ = c.call(
                4,
                &FindCoordinatorRequest::default()
                    .with_key_type(1)
                    .with_coordinator_keys(vec![s(txn)]),
            );
            let r = c.call(
                1,
                &InitProducerIdRequest::default()
                    .with_transactional_id(Some(s(txn).into()))
                    .with_transaction_timeout_ms(60_000),
            );
            if r.error_code == 0 {
                break (r.producer_id.0, r.producer_epoch);
            }
            assert!(
                Instant::now() < deadline,
                "InitProducerId: {}",
                r.error_code
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        let add = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(s(txn).into())
            .with_v3_and_below_producer_id(ProducerId(pid))
            .with_v3_and_below_producer_epoch(epoch)
            .with_v3_and_below_topics(vec![
                add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                    .with_name(s(topic).into())
                    .with_partitions(vec![0]),
            ]);
        let r = c.call(3, &add);
        assert_eq!(
            r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
            0
        );
        RawTxn {
            c,
            txn: txn.to_string(),
            topic: topic.to_string(),
            pid,
            epoch,
        }
    }

    /// Writes `values` as one transactional batch (first sequence 0).
    pub(crate) fn produce(&mut self, values: &[&str]) {
        let batch = super::common::raw::txn_batch(self.pid, self.epoch, 0, values);
        let r = self.c.call(
            9,
            &super::common::raw::txn_produce(&self.txn, &self.topic, 0, batch),
        );
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    }

    /// Commits or aborts, then waits until the marker is in the log (it is
    /// written after EndTxn is answered, as on Kafka): until the log end
    /// offset reaches `log_end`.
    pub(crate) fn end(&mut self, commit: bool, log_end: i64) {
        let r = self.c.call(
            3,
            &EndTxnRequest::default()
                .with_transactional_id(s(&self.txn).into())
                .with_producer_id(ProducerId(self.pid))
                .with_producer_epoch(self.epoch)
                .with_committed(commit),
        );
        assert_eq!(r.error_code, 0);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let r = self.c.call(
                2,
                &ListOffsetsRequest::default()
                    .with_replica_id(BrokerId(-1))
                    .with_topics(vec![list_offsets_request::ListOffsetsTopic::default()
                        .with_name(s(&self.topic).into())
                        .with_partitions(vec![
                            list_offsets_request::ListOffsetsPartition::default()
                                .with_partition_index(0)
                                .with_timestamp(-1),
                        ])]),
            );
            if r.topics[0].partitions[0].offset >= log_end {
                break;
            }
            assert!(Instant::now() < deadline, "{}: no marker", self.topic);
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Sets group configs of `group` (IncrementalAlterConfigs SET on resource
/// type 32, GROUP).
pub(crate) fn set_group_configs(addr: &str, group: &str, configs: &[(&str, &str)]) {
    let mut c = Conn::new(addr);
    let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
        incremental_alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(32)
            .with_resource_name(s(group))
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        incremental_alter_configs_request::AlterableConfig::default()
                            .with_name(s(k))
                            .with_config_operation(0)
                            .with_value(Some(s(v)))
                    })
                    .collect(),
            ),
    ]);
    let r = c.call(1, &req);
    assert_eq!(
        r.responses[0].error_code, 0,
        "{group} {configs:?}: {:?}",
        r.responses[0].error_message
    );
    // The broker applies an accepted change from the metadata log after
    // answering (Kafka's broker as Fjord's): wait until it describes them.
    let describe = DescribeConfigsRequest::default().with_resources(vec![
        describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(32)
            .with_resource_name(s(group))
            .with_configuration_keys(Some(configs.iter().map(|(k, _)| s(k)).collect())),
    ]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = c.call(4, &describe);
        let shown = configs.iter().all(|(k, v)| {
            r.results[0].configs.iter().any(|cfg| {
                cfg.name.as_str() == *k
                    && cfg.value.as_deref() == Some(*v)
                    && cfg.config_source == 8
            })
        });
        if shown {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{group} {configs:?} not described: {r:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A member's share session on one connection, counting its epochs.
pub(crate) struct Session {
    pub(crate) c: Conn,
    pub(crate) group: String,
    pub(crate) member: String,
    pub(crate) epoch: i32,
}

impl Session {
    pub(crate) fn new(t: &Target, group: &str, member: &str) -> Session {
        Session {
            c: Conn::new(&t.addr),
            group: group.to_string(),
            member: member.to_string(),
            epoch: 0,
        }
    }

    /// A ShareFetch of one partition at the session's next epoch.
    pub(crate) fn fetch(
        &mut self,
        topic_id: Uuid,
        partition: i32,
        acks: &Acks,
        max_wait_ms: i32,
        max_records: i32,
    ) -> ShareFetchResponse {
        let req = share_fetch_req(
            &self.group,
            &self.member,
            self.epoch,
            topic_id,
            partition,
            acks,
            max_wait_ms,
            max_records,
        );
        let r = self.c.call(1, &req);
        assert_eq!(r.error_code, 0, "ShareFetch at epoch {}: {r:?}", self.epoch);
        self.epoch += 1;
        r
    }

    /// A ShareAcknowledge of one partition at the session's next epoch;
    /// gives the partition's error code.
    pub(crate) fn ack(&mut self, topic_id: Uuid, partition: i32, acks: &Acks) -> i16 {
        let req = share_ack_req(
            &self.group,
            &self.member,
            self.epoch,
            topic_id,
            partition,
            acks,
        );
        let r = self.c.call(1, &req);
        assert_eq!(
            r.error_code, 0,
            "ShareAcknowledge at epoch {}: {r:?}",
            self.epoch
        );
        self.epoch += 1;
        r.responses[0].partitions[0].error_code
    }

    /// Fetches until something is acquired (each fetch long-polls up to
    /// 2 s; at most `limit`); gives the acquired runs.
    pub(crate) fn fetch_some(
        &mut self,
        topic_id: Uuid,
        partition: i32,
        max_records: i32,
        limit: Duration,
    ) -> Vec<(i64, i64, i16)> {
        let deadline = Instant::now() + limit;
        loop {
            let r = self.fetch(topic_id, partition, &vec![], 2000, max_records);
            let got = acquired(&r, topic_id, partition);
            if !got.is_empty() {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "nothing acquired within {limit:?}"
            );
        }
    }
}

/// The acquired runs (first, last, delivery count) of a partition.
pub(crate) fn acquired(
    r: &ShareFetchResponse,
    topic_id: Uuid,
    partition: i32,
) -> Vec<(i64, i64, i16)> {
    r.responses
        .iter()
        .filter(|t| t.topic_id == topic_id)
        .flat_map(|t| t.partitions.iter())
        .filter(|p| p.partition_index == partition)
        .flat_map(|p| {
            assert_eq!(p.error_code, 0, "partition error: {p:?}");
            p.acquired_records
                .iter()
                .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
        })
        .collect()
}
