//! Kafka wire protocol over a blocking TCP socket: framing, typed
//! request/response round trips for the control path, and version
//! negotiation. The hot paths (produce, fetch) use the same framing but
//! pre-encoded frames.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_request::ApiVersionsRequest;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, DeleteTopicsRequest, ListOffsetsRequest, MetadataRequest,
    RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{
    encode_request_header_into_buffer, Decodable, HeaderVersion, Request, StrBytes,
};

pub type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

pub const CLIENT_ID: &str = "fjord-perf";

/// A connection with its own read buffer.
pub struct Conn {
    pub stream: TcpStream,
    rbuf: BytesMut,
    next_correlation: i32,
}

impl Conn {
    pub fn connect(addr: &str) -> Res<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            rbuf: BytesMut::with_capacity(1 << 20),
            next_correlation: 1,
        })
    }

    /// A connection with a small read buffer (for the many idle
    /// connections of the scale workload).
    pub fn connect_small(addr: &str) -> Res<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            rbuf: BytesMut::with_capacity(4096),
            next_correlation: 1,
        })
    }

    /// The socket alone (drops the read buffer).
    pub fn into_stream(self) -> TcpStream {
        self.stream
    }

    pub fn try_clone(&self) -> Res<Conn> {
        Ok(Conn {
            stream: self.stream.try_clone()?,
            rbuf: BytesMut::with_capacity(1 << 20),
            next_correlation: self.next_correlation,
        })
    }

    /// Reads one response frame (without its 4-byte size prefix).
    pub fn read_frame(&mut self) -> Res<Bytes> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len)?;
        let len = i32::from_be_bytes(len);
        if !(0..=(1 << 30)).contains(&len) {
            return Err(format!("bad frame length {len}").into());
        }
        let len = len as usize;
        self.rbuf.clear();
        self.rbuf.reserve(len);
        // SAFETY-free path: zero-fill then read into the initialised bytes.
        self.rbuf.resize(len, 0);
        self.stream.read_exact(&mut self.rbuf[..])?;
        Ok(self.rbuf.split().freeze())
    }

    pub fn next_correlation(&mut self) -> i32 {
        let c = self.next_correlation;
        self.next_correlation = self.next_correlation.wrapping_add(1);
        c
    }

    /// One synchronous round trip of a typed request.
    pub fn call<R: Request>(&mut self, req: &R, version: i16) -> Res<R::Response> {
        let correlation = self.next_correlation();
        let frame = encode_frame(req, version, correlation)?;
        self.stream.write_all(&frame)?;
        let mut body = self.read_frame()?;
        let header = ResponseHeader::decode(
            &mut body,
            <R::Response as HeaderVersion>::header_version(version),
        )?;
        if header.correlation_id != correlation {
            return Err(format!(
                "correlation mismatch: sent {correlation}, got {}",
                header.correlation_id
            )
            .into());
        }
        Ok(R::Response::decode(&mut body, version)?)
    }
}

/// Encodes a complete request frame: size prefix, header, body.
pub fn encode_frame<R: Request>(req: &R, version: i16, correlation: i32) -> Res<Bytes> {
    let mut header = RequestHeader::default();
    header.request_api_key = R::KEY;
    header.request_api_version = version;
    header.correlation_id = correlation;
    header.client_id = Some(StrBytes::from_static_str(CLIENT_ID));
    let mut buf = BytesMut::with_capacity(req.compute_size(version)? + 64);
    buf.put_i32(0);
    encode_request_header_into_buffer(&mut buf, &header)?;
    req.encode(&mut buf, version)?;
    let len = (buf.len() - 4) as i32;
    buf[0..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf.freeze())
}

/// Byte position of the correlation id inside a request frame (after the
/// size prefix, API key and API version). The same in every header version.
pub const CORRELATION_POS: usize = 8;

/// Versions the broker serves, by API key.
#[derive(Debug, Clone, Default)]
pub struct Versions(pub HashMap<i16, (i16, i16)>);

impl Versions {
    pub fn fetch(conn: &mut Conn) -> Res<Versions> {
        let mut req = ApiVersionsRequest::default();
        req.client_software_name = StrBytes::from_static_str(CLIENT_ID);
        req.client_software_version = StrBytes::from_static_str(env!("CARGO_PKG_VERSION"));
        // v3 is flexible; every broker since Kafka 2.4 answers it, and an
        // older one answers with v0 on UNSUPPORTED_VERSION, which we retry.
        let resp = match conn.call(&req, 3) {
            Ok(r) if r.error_code == 0 => r,
            _ => conn.call(&ApiVersionsRequest::default(), 0)?,
        };
        Ok(Versions(
            resp.api_keys
                .iter()
                .map(|k| (k.api_key, (k.min_version, k.max_version)))
                .collect(),
        ))
    }

    /// The highest version both ends support, preferring `want` (and
    /// never above `client_max`, what this harness can encode).
    pub fn pick(&self, key: ApiKey, want: i16, client_min: i16) -> Res<i16> {
        let (lo, hi) = self
            .0
            .get(&(key as i16))
            .copied()
            .ok_or_else(|| format!("broker does not serve {key:?}"))?;
        let v = want.min(hi);
        if v < lo.max(client_min) {
            return Err(format!("no common version for {key:?}: broker {lo}..={hi}").into());
        }
        Ok(v)
    }
}

pub fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

/// Creates the topic with `replication_factor` replicas per partition; an
/// existing topic (error 36) is fine.
pub fn create_topic(
    conn: &mut Conn,
    versions: &Versions,
    name: &str,
    partitions: i32,
    replication_factor: i16,
    configs: &[(String, String)],
) -> Res<()> {
    let v = versions.pick(ApiKey::CreateTopics, 5, 2)?;
    let mut t = CreatableTopic::default();
    t.name = topic_name(name);
    t.num_partitions = partitions;
    t.replication_factor = replication_factor;
    for (k, val) in configs {
        let mut c = CreatableTopicConfig::default();
        c.name = StrBytes::from_string(k.clone());
        c.value = Some(StrBytes::from_string(val.clone()));
        t.configs.push(c);
    }
    let mut req = CreateTopicsRequest::default();
    req.topics.push(t);
    req.timeout_ms = 30_000;
    let resp = conn.call(&req, v)?;
    for t in resp.topics {
        if t.error_code != 0 && t.error_code != 36 {
            return Err(format!(
                "CreateTopics {name}: error {} {:?}",
                t.error_code, t.error_message
            )
            .into());
        }
    }
    wait_for_leaders(conn, versions, name, partitions)
}

/// Polls Metadata until every partition of `name` has a leader: a broker
/// may answer CreateTopics before its partitions can take produce requests
/// (Apache Kafka applies the topic from its metadata log asynchronously).
/// On a single broker, then also until ListOffsets answers for every
/// partition: Kafka's Metadata can name the leader a moment before its
/// replica manager takes the leadership, and a Produce in that moment gets
/// NOT_LEADER_OR_FOLLOWER. Gives up after 30 s.
fn wait_for_leaders(conn: &mut Conn, versions: &Versions, name: &str, partitions: i32) -> Res<()> {
    let v = versions.pick(ApiKey::Metadata, 9, 1)?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let mut req = MetadataRequest::default();
        let mut t = MetadataRequestTopic::default();
        t.name = Some(topic_name(name));
        req.topics = Some(vec![t]);
        let resp = conn.call(&req, v)?;
        let ready = resp.topics.iter().any(|t| {
            t.error_code == 0
                && t.partitions.len() as i32 >= partitions
                && t.partitions
                    .iter()
                    .all(|p| p.error_code == 0 && p.leader_id.0 >= 0)
        });
        if ready && resp.brokers.len() > 1 {
            return Ok(());
        }
        if ready {
            let all: Vec<i32> = (0..partitions).collect();
            if list_offsets(conn, versions, name, &all, -1).is_ok() {
                return Ok(());
            }
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("topic {name}: partitions without a leader after 30 s").into());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Deletes the topic; an unknown topic (error 3) is fine.
pub fn delete_topic(conn: &mut Conn, versions: &Versions, name: &str) -> Res<()> {
    // v1..=5 name topics in `topic_names`; v6 moved them into `topics`.
    let v = versions.pick(ApiKey::DeleteTopics, 5, 1)?;
    let mut req = DeleteTopicsRequest::default();
    req.topic_names.push(topic_name(name));
    req.timeout_ms = 30_000;
    let resp = conn.call(&req, v)?;
    for r in resp.responses {
        if r.error_code != 0 && r.error_code != 3 {
            return Err(format!("DeleteTopics {name}: error {}", r.error_code).into());
        }
    }
    Ok(())
}

/// ListOffsets for every partition: `timestamp` -1 = end, -2 = start.
pub fn list_offsets(
    conn: &mut Conn,
    versions: &Versions,
    topic: &str,
    partitions: &[i32],
    timestamp: i64,
) -> Res<HashMap<i32, i64>> {
    let v = versions.pick(ApiKey::ListOffsets, 7, 1)?;
    let mut t = ListOffsetsTopic::default();
    t.name = topic_name(topic);
    for &p in partitions {
        let mut lp = ListOffsetsPartition::default();
        lp.partition_index = p;
        lp.current_leader_epoch = -1;
        lp.timestamp = timestamp;
        t.partitions.push(lp);
    }
    let mut req = ListOffsetsRequest::default();
    req.replica_id = (-1).into();
    req.topics.push(t);
    let resp = conn.call(&req, v)?;
    let mut out = HashMap::new();
    for t in resp.topics {
        for p in t.partitions {
            if p.error_code != 0 {
                return Err(format!(
                    "ListOffsets {topic}-{}: error {}",
                    p.partition_index, p.error_code
                )
                .into());
            }
            out.insert(p.partition_index, p.offset);
        }
    }
    Ok(out)
}
