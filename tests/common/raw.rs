//! One raw Kafka connection for tests that speak the protocol with the
//! protocol crate's request types: correlation ids counted, a 60 s read
//! timeout, and a SASL/PLAIN login for listeners that need one.

use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{
    create_topics_request, produce_request, CreateTopicsRequest, ProduceRequest,
    SaslAuthenticateRequest, SaslHandshakeRequest, TopicName,
};
use kafka_protocol::protocol::{Request, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::{connect, kp_call, kp_send, now_ms};

/// A connection to one broker.
pub struct RawConn {
    /// The socket.
    pub s: TcpStream,
    /// The last correlation id sent.
    cid: i32,
}

impl RawConn {
    /// Connects to `addr` (PLAINTEXT, or a SASL listener before login).
    pub fn new(addr: &str) -> RawConn {
        let c = RawConn {
            s: connect(addr),
            cid: 0,
        };
        c.s.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("read timeout");
        c
    }

    /// Connects to `addr` and authenticates `user` with SASL/PLAIN
    /// (SaslHandshake v1, SaslAuthenticate v2); panics when refused.
    pub fn login(addr: &str, user: &str, password: &str) -> RawConn {
        let mut c = RawConn::new(addr);
        let hs = c.call(
            1,
            &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN")),
        );
        assert_eq!(hs.error_code, 0, "SaslHandshake for {user}");
        let token = format!("\0{user}\0{password}");
        let auth = c.call(
            2,
            &SaslAuthenticateRequest::default().with_auth_bytes(bytes::Bytes::from(token)),
        );
        assert_eq!(auth.error_code, 0, "SaslAuthenticate for {user}");
        c
    }

    /// One round trip of `req` at `version`.
    pub fn call<R: Request>(&mut self, version: i16, req: &R) -> R::Response {
        self.cid += 1;
        kp_call(&mut self.s, version, self.cid, req)
    }

    /// Sends `req` at `version` without reading an answer (for requests the
    /// broker is expected to close the connection on).
    pub fn send<R: Request>(&mut self, version: i16, req: &R) {
        self.cid += 1;
        kp_send(&mut self.s, version, self.cid, req);
    }
}

/// One transactional RecordBatch v2 (uncompressed, CreateTime now) of
/// `values` from (`pid`, `epoch`), sequences from `first_sequence`.
pub fn txn_batch<V: AsRef<str>>(pid: i64, epoch: i16, first_sequence: i32, values: &[V]) -> Bytes {
    let now = now_ms();
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, v)| Record {
            transactional: true,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: pid,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: first_sequence + i as i32,
            timestamp: now,
            key: None,
            value: Some(Bytes::copy_from_slice(v.as_ref().as_bytes())),
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

/// A Produce request (acks=all, 10 s timeout) of `records` to `partition`
/// of `topic` in the transaction of `id`.
pub fn txn_produce(id: &str, topic: &str, partition: i32, records: Bytes) -> ProduceRequest {
    produce_request(topic, -1, vec![(partition, records)])
        .with_transactional_id(Some(StrBytes::from_string(id.to_string()).into()))
}

/// A Produce request (`acks`, 10 s timeout, no transactional id) to
/// `topic` with one batch per `(partition, records)`, in that order.
pub fn produce_request(topic: &str, acks: i16, batches: Vec<(i32, Bytes)>) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(StrBytes::from_string(topic.to_string()).into())
            .with_partition_data(
                batches
                    .into_iter()
                    .map(|(partition, records)| {
                        produce_request::PartitionProduceData::default()
                            .with_index(partition)
                            .with_records(Some(records))
                    })
                    .collect(),
            )])
}

/// Creates `topic` with one partition (replication factor 1) through the
/// PLAINTEXT listener `plain` (CreateTopics v7, 30 s timeout); panics when
/// refused.
pub fn create_one_partition(plain: &str, topic: &str) {
    let created = RawConn::new(plain).call(
        7,
        &CreateTopicsRequest::default()
            .with_timeout_ms(30_000)
            .with_topics(vec![create_topics_request::CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_num_partitions(1)
                .with_replication_factor(1)]),
    );
    assert_eq!(created.topics[0].error_code, 0, "creating {topic}");
}
