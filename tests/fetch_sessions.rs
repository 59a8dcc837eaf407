//! Fetch sessions (KIP-227) over TCP with raw requests: a full request
//! (epoch 0) creates a session; incremental requests name only changed
//! partitions and get only partitions with something new (records, a moved
//! high watermark); a long poll of a session waits for data of a partition
//! the request does not name; `forgotten_topics_data` drops partitions; a
//! wrong epoch gets INVALID_FETCH_SESSION_EPOCH without harming the session;
//! epoch -1 closes it (FETCH_SESSION_ID_NOT_FOUND afterwards). Both by topic
//! name (v12) and by topic id (v13+). And on a three-node cluster, the
//! replica fetchers' sessions: the leaders hold them, acks=all with
//! `min.insync.replicas=3` goes on, and partitions no request names (idle
//! ones) keep their followers in the ISR.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::cluster::{try_kp_call, Cluster};
use common::layout::{admin, layout_on, wait_topic};
use common::*;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::ProduceResponse;
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, FetchRequest, FetchResponse, MetadataRequest, ProduceRequest,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{NewTopic, TopicReplication};
use uuid::Uuid;

const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
const INVALID_FETCH_SESSION_EPOCH: i16 = 71;

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Raw requests on one connection, with a running correlation id.
struct Conn {
    s: TcpStream,
    cid: i32,
}

impl Conn {
    fn new(addr: &str) -> Conn {
        Conn {
            s: connect(addr),
            cid: 1,
        }
    }

    fn next(&mut self) -> i32 {
        self.cid += 1;
        self.cid
    }

    fn produce(&mut self, topic: &str, partition: i32, value: &str) {
        let req = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(sb(topic)))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(one_record_batch(
                        bytes::Bytes::from(value.to_string()),
                        now_ms(),
                    )))])]);
        // A new topic's leader may not know it leads yet (a Kafka broker
        // answers NOT_LEADER_OR_FOLLOWER for a moment).
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let cid = self.next();
            let resp = kp_call(&mut self.s, 8, cid, &req);
            let pr = &resp.responses[0].partition_responses[0];
            if pr.error_code == 6 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            assert_eq!(pr.error_code, 0, "{:?}", pr.error_message);
            return;
        }
    }
}

/// How the test names its topic: by name (Fetch v12) or by id (v13+).
#[derive(Clone)]
struct Topic {
    name: String,
    id: Uuid,
    version: i16,
}

impl Topic {
    fn fetch_topic(&self, parts: &[(i32, i64)]) -> FetchTopic {
        let t = if self.version >= 13 {
            FetchTopic::default().with_topic_id(self.id)
        } else {
            FetchTopic::default().with_topic(TopicName(sb(&self.name)))
        };
        t.with_partitions(
            parts
                .iter()
                .map(|(p, offset)| {
                    FetchPartition::default()
                        .with_partition(*p)
                        .with_fetch_offset(*offset)
                        .with_partition_max_bytes(1 << 20)
                })
                .collect(),
        )
    }

    fn forgotten(&self, parts: &[i32]) -> ForgottenTopic {
        let t = if self.version >= 13 {
            ForgottenTopic::default().with_topic_id(self.id)
        } else {
            ForgottenTopic::default().with_topic(TopicName(sb(&self.name)))
        };
        t.with_partitions(parts.to_vec())
    }
}

/// One Fetch of a session: (`session_id`, `epoch`), the partitions named
/// (index, fetch offset), the forgotten ones, `min_bytes` and `max_wait_ms`.
fn request(
    t: &Topic,
    session: (i32, i32),
    parts: &[(i32, i64)],
    forget: &[i32],
    wait: (i32, i32),
) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_min_bytes(wait.0)
        .with_max_wait_ms(wait.1)
        .with_max_bytes(1 << 20)
        .with_session_id(session.0)
        .with_session_epoch(session.1)
        .with_topics(if parts.is_empty() {
            vec![]
        } else {
            vec![t.fetch_topic(parts)]
        })
        .with_forgotten_topics_data(if forget.is_empty() {
            vec![]
        } else {
            vec![t.forgotten(forget)]
        })
}

fn fetch(
    c: &mut Conn,
    t: &Topic,
    session: (i32, i32),
    parts: &[(i32, i64)],
    forget: &[i32],
) -> FetchResponse {
    let req = request(t, session, parts, forget, (0, 0));
    let cid = c.next();
    kp_call(&mut c.s, t.version, cid, &req)
}

/// (partition, high watermark, record bytes) of each partition answered,
/// in answer order.
fn answered(resp: &FetchResponse) -> Vec<(i32, i64, usize)> {
    assert_eq!(resp.error_code, 0, "top-level error");
    resp.responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| {
            assert_eq!(p.error_code, 0, "partition {}", p.partition_index);
            (
                p.partition_index,
                p.high_watermark,
                p.records.as_ref().map_or(0, |r| r.len()),
            )
        })
        .collect()
}

fn indices(resp: &FetchResponse) -> Vec<i32> {
    answered(resp).into_iter().map(|(p, _, _)| p).collect()
}

fn create_topic(c: &mut Conn, name: &str, parts: i32) -> Uuid {
    let create = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(sb(name)))
            .with_num_partitions(parts)
            .with_replication_factor(1)]);
    let cid = c.next();
    assert_eq!(kp_call(&mut c.s, 4, cid, &create).topics[0].error_code, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let md =
            MetadataRequest::default().with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(TopicName(sb(name))))
            ]));
        let cid = c.next();
        let resp = kp_call(&mut c.s, 12, cid, &md);
        let t = &resp.topics[0];
        let led = t.partitions.iter().all(|p| p.leader_id.0 >= 0);
        if t.error_code == 0 && t.partitions.len() == parts as usize && !t.topic_id.is_nil() && led
        {
            return t.topic_id;
        }
        assert!(Instant::now() < deadline, "topic {name} not ready");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn session_scenario(addr: &str, t: &Topic) {
    let mut c = Conn::new(addr);
    let mut producer = Conn::new(addr);
    for p in 0..3 {
        producer.produce(&t.name, p, "first");
    }

    // Full request, epoch 0: a session, every partition with its record.
    let resp = fetch(&mut c, t, (0, 0), &[(0, 0), (1, 0), (2, 0)], &[]);
    let id = resp.session_id;
    assert!(id > 0, "a full request with epoch 0 creates a session");
    let full = answered(&resp);
    assert_eq!(indices(&resp), vec![0, 1, 2]);
    assert!(full.iter().all(|(_, hw, bytes)| *hw == 1 && *bytes > 0));

    // Epoch 1 moves every fetch offset to the end: nothing is new.
    let resp = fetch(&mut c, t, (id, 1), &[(0, 1), (1, 1), (2, 1)], &[]);
    assert_eq!(resp.session_id, id);
    assert_eq!(
        answered(&resp),
        vec![],
        "nothing changed since the last answer"
    );

    // A record on partition 1 only: epoch 2, naming no partition, gets it.
    producer.produce(&t.name, 1, "second");
    let resp = fetch(&mut c, t, (id, 2), &[], &[]);
    let got = answered(&resp);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, got[0].1), (1, 2));
    assert!(got[0].2 > 0, "partition 1 carries its new record");

    // A wrong epoch fails the request, not the session.
    let resp = fetch(&mut c, t, (id, 7), &[], &[]);
    assert_eq!(resp.error_code, INVALID_FETCH_SESSION_EPOCH);

    // A long poll of the session (epoch 3) waits for data on a partition
    // the request does not name.
    let req = request(t, (id, 3), &[(1, 2)], &[], (1, 20_000));
    let cid = c.next();
    let sent = Instant::now();
    kp_send(&mut c.s, t.version, cid, &req);
    producer.produce(&t.name, 2, "third");
    c.s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let resp: FetchResponse = kp_recv::<FetchRequest>(&mut c.s, t.version, cid);
    let got = answered(&resp);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (got[0].0, got[0].1),
        (2, 2),
        "partition 2's record woke the poll"
    );
    assert!(got[0].2 > 0);
    assert!(
        sent.elapsed() < Duration::from_secs(15),
        "answered on the append"
    );

    // Forgetting partition 2: its records no longer come.
    let resp = fetch(&mut c, t, (id, 4), &[(2, 2)], &[2]);
    assert_eq!(answered(&resp), vec![]);
    producer.produce(&t.name, 2, "fourth");
    producer.produce(&t.name, 0, "fourth");
    let resp = fetch(&mut c, t, (id, 5), &[], &[]);
    assert_eq!(indices(&resp), vec![0], "partition 2 is forgotten");

    // Epoch -1 closes the session and is answered sessionless.
    let resp = fetch(&mut c, t, (id, -1), &[(0, 0)], &[]);
    assert_eq!(resp.session_id, 0);
    assert_eq!(indices(&resp), vec![0]);
    let resp = fetch(&mut c, t, (id, 6), &[], &[]);
    assert_eq!(resp.error_code, FETCH_SESSION_ID_NOT_FOUND);

    // Sessionless requests (id 0, epoch -1) never create one.
    let resp = fetch(&mut c, t, (0, -1), &[(0, 0)], &[]);
    assert_eq!(resp.session_id, 0);
    assert_eq!(indices(&resp), vec![0]);
}

/// `FETCH_SESSIONS_BROKER=host:port` runs the scenario against that broker
/// instead of a new Fjord (Apache Kafka 4.4 from `scripts/peers/kafka start`
/// answers it the same).
#[test]
fn incremental_fetches_carry_only_changed_partitions() {
    let mut broker = None;
    let addr = match std::env::var("FETCH_SESSIONS_BROKER") {
        Ok(addr) => addr,
        Err(_) => broker.insert(Broker::start()).bootstrap(),
    };
    let mut admin = Conn::new(&addr);
    let run = now_ms();
    for (name, version) in [("by-name", 12), ("by-id", 13), ("by-id-v16", 16)] {
        let name = format!("{name}-{run}");
        let id = create_topic(&mut admin, &name, 3);
        let t = Topic { name, id, version };
        session_scenario(&addr, &t);
    }
    drop(broker);
}

#[test]
fn zero_cache_slots_serve_every_fetch_sessionless() {
    let broker = Broker::start_with(&["max.incremental.fetch.session.cache.slots=0"]);
    let mut c = Conn::new(&broker.bootstrap());
    let id = create_topic(&mut c, "t", 1);
    let t = Topic {
        name: "t".into(),
        id,
        version: 12,
    };
    let resp = fetch(&mut c, &t, (0, 0), &[(0, 0)], &[]);
    assert_eq!(resp.session_id, 0);
    assert_eq!(indices(&resp), vec![0]);
}

/// The metrics address node `id` logged.
fn metrics_address(c: &Cluster, id: i32) -> Option<String> {
    let text = c.stderr_text(id);
    let line = text
        .lines()
        .find(|l| l.contains("metrics endpoint on http://"))?;
    let rest = line.split("http://").nth(1)?;
    Some(rest.trim_end_matches("/metrics").trim().to_string())
}

/// The sum over the shards of node `id` of the metric `name`.
fn metric_sum(c: &Cluster, id: i32, name: &str) -> f64 {
    let Some(addr) = metrics_address(c, id) else {
        return 0.0;
    };
    let Ok((200, body)) = fjord::metrics::fetch(&addr, "/metrics") else {
        return 0.0;
    };
    fjord::metrics::parse(&body)
        .iter()
        .filter(|s| s.name == name)
        .map(|s| s.value)
        .sum()
}

/// An acks=all Produce of one record to `topic`-`partition` on node `id`:
/// the partition's error code.
fn produce_on(c: &Cluster, id: i32, topic: &str, partition: i32) -> i16 {
    let batch = one_record_batch(bytes::Bytes::from_static(b"v"), now_ms());
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(sb(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(batch))])]);
    let mut s = TcpStream::connect(c.bootstrap(id)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let resp: ProduceResponse = try_kp_call(&mut s, 9, 7, &req).unwrap();
    resp.responses[0].partition_responses[0].error_code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_fetch_in_sessions_and_idle_partitions_stay_in_sync() {
    let c = Cluster::start(
        3,
        &[
            "replica.lag.time.max.ms=2000",
            "metrics.listener=127.0.0.1:0",
        ],
    );
    let topic = "sessions";
    let a = admin(&c, &c.bootstrap_all());
    let t = NewTopic::new(topic, 4, TopicReplication::Fixed(3)).set("min.insync.replicas", "3");
    let r = a.create_topics(&[t], &admin_opts()).await.unwrap();
    assert!(r[0].is_ok(), "{r:?}");
    let all = c.ids();
    let full: Vec<i32> = all.clone();
    // Every partition led and with its full ISR on every node.
    let deadline = Instant::now() + Duration::from_secs(60);
    let layout = loop {
        let l = wait_topic(&c, &all, topic, 4);
        let in_sync = l.parts.values().all(|p| {
            let mut isr = p.isr.clone();
            isr.sort();
            p.leader >= 0 && isr == full
        });
        if in_sync {
            break l;
        }
        assert!(Instant::now() < deadline, "ISR never full: {:?}", l.parts);
        std::thread::sleep(Duration::from_millis(100));
    };
    // acks=all with min.insync.replicas=3 on every partition: each needs
    // both followers' fetch offsets to move the high watermark.
    for (p, part) in &layout.parts {
        assert_eq!(produce_on(&c, part.leader, topic, *p), 0, "partition {p}");
    }
    // Then only partition 0 gets records, for three times
    // replica.lag.time.max.ms: the followers' requests name partition 0
    // alone, and the others stay in the ISR only if the leader learns the
    // followers' LEO from the session's partitions the requests leave out.
    let leader0 = layout.parts[&0].leader;
    let until = Instant::now() + Duration::from_secs(6);
    while Instant::now() < until {
        assert_eq!(produce_on(&c, leader0, topic, 0), 0);
        std::thread::sleep(Duration::from_millis(200));
    }
    for id in &all {
        let l = layout_on(&c, *id, topic).unwrap().unwrap();
        for (p, part) in &l.parts {
            let mut isr = part.isr.clone();
            isr.sort();
            assert_eq!(isr, full, "partition {p} as node {id} shows it");
        }
    }
    for (p, part) in &layout.parts {
        assert_eq!(produce_on(&c, part.leader, topic, *p), 0, "partition {p}");
    }
    // The leader of partition 0 holds a session for each follower broker.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n = metric_sum(&c, leader0, "fjord_incremental_fetch_sessions");
        if n >= 2.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node {leader0} holds {n} fetch sessions"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Each shard keeps its own sessions and a session id names its shard: a
/// new connection that the kernel hands to the other shard (connections
/// spread over the shards' SO_REUSEPORT listeners by their source port) gets
/// FETCH_SESSION_ID_NOT_FOUND for a session of the first, which stays
/// usable; one on the same shard may go on with it.
#[test]
fn a_session_lives_on_the_shard_of_its_connection() {
    let broker = Broker::start();
    let addr = broker.bootstrap();
    let mut c = Conn::new(&addr);
    let id = create_topic(&mut c, "t", 1);
    let t = Topic {
        name: "t".into(),
        id,
        version: 13,
    };
    let resp = fetch(&mut c, &t, (0, 0), &[(0, 0)], &[]);
    let session = resp.session_id;
    assert!(session > 0);
    let mut epoch = 1;
    let mut refused = 0;
    // 64 connections: the chance that all land on the same of 2 shards is
    // 2^-63.
    for _ in 0..64 {
        let mut other = Conn::new(&addr);
        let resp = fetch(&mut other, &t, (session, epoch), &[], &[]);
        match resp.error_code {
            0 => epoch += 1,
            FETCH_SESSION_ID_NOT_FOUND => refused += 1,
            code => panic!("error {code}"),
        }
        if refused > 0 && epoch > 1 {
            break;
        }
    }
    assert!(refused > 0, "no connection landed on the other shard");
    // The session is untouched by the refusals.
    let resp = fetch(&mut c, &t, (session, epoch), &[], &[]);
    assert_eq!(resp.error_code, 0);
    assert_eq!(resp.session_id, session);
}
