//! Micro-benchmarks of the per-request work around the data: Produce and
//! Fetch request decoding and response encoding (as the handlers do it),
//! offset lookup in a log of many small batches, one round trip over the
//! cross-shard channel mesh, and the authorizer's check of a produce (WRITE
//! on a topic) among 1,000 ACLs. Run:
//! `cargo bench --bench request_paths -- --warm-up-time 1 --measurement-time 2`.

// Benchmarks: a failed set-up should stop the run at once; criterion's
// macros generate the undocumented entry points.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fjord::acl::authorizer::AclIndex;
use fjord::acl::model::{AclBinding, Operation, PatternType, Permission, ResourceType};
use fjord::handlers::fetch::{encode_fetch_response, FetchPartitionOut, FetchTopicOut};
use fjord::protocol::{encode_response, RequestFrame};
use fjord::storage::index::OffsetIndex;
use fjord::storage::{validate_batches, FileRegion, LogConfig, PartitionLog};
use glommio::channels::channel_mesh::MeshBuilder;
use glommio::{LocalExecutorBuilder, Placement};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, ProduceRequest, ProduceResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions};

const PRODUCE_V: i16 = 9;
const FETCH_V: i16 = 12;

fn or_die<T, E: std::fmt::Display>(r: Result<T, E>, what: &str) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: {e}"),
    }
}

/// One uncompressed RecordBatch v2 of `count` records of `value_len` bytes.
fn batch(count: usize, value_len: usize) -> Bytes {
    let records: Vec<Record> = (0..count)
        .map(|i| {
            fjord::protocol::plain_record(
                i as i64,
                1_700_000_000_000 + i as i64,
                None,
                Some(Bytes::from(vec![b'x'; value_len])),
            )
        })
        .collect();
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    or_die(
        RecordBatchEncoder::encode(&mut buf, records.iter(), &opts),
        "encode batch",
    );
    buf.freeze()
}

fn topic() -> TopicName {
    TopicName(StrBytes::from_static_str("bench-topic"))
}

/// A request frame as the connection cuts it out (no size prefix).
fn frame<R: Encodable + HeaderVersion>(key: ApiKey, version: i16, body: &R) -> Bytes {
    let mut h = RequestHeader::default();
    h.request_api_key = key as i16;
    h.request_api_version = version;
    h.correlation_id = 7;
    h.client_id = Some(StrBytes::from_static_str("bench"));
    let mut buf = BytesMut::new();
    or_die(h.encode(&mut buf, R::header_version(version)), "header");
    or_die(body.encode(&mut buf, version), "body");
    buf.freeze()
}

/// Produce v9 with `partitions` partitions of one batch each.
fn produce_frame(partitions: i32, b: &Bytes) -> Bytes {
    let mut td = TopicProduceData::default();
    td.name = topic();
    for p in 0..partitions {
        let mut pd = PartitionProduceData::default();
        pd.index = p;
        pd.records = Some(b.clone());
        td.partition_data.push(pd);
    }
    let mut req = ProduceRequest::default();
    req.acks = 1;
    req.timeout_ms = 30_000;
    req.topic_data.push(td);
    frame(ApiKey::Produce, PRODUCE_V, &req)
}

fn bench_produce(c: &mut Criterion) {
    let mut g = c.benchmark_group("produce request");
    for (name, parts, count, len) in [
        ("1 x 64KiB batch", 1, 64usize, 1000usize),
        ("1 x 16 x 100B batch", 1, 16, 100),
        ("100 partitions x 16 x 100B", 100, 16, 100),
    ] {
        let f = produce_frame(parts, &batch(count, len));
        g.throughput(Throughput::Bytes(f.len() as u64));
        g.bench_with_input(BenchmarkId::new("parse + decode", name), &f, |bench, f| {
            bench.iter(|| {
                let r = or_die(RequestFrame::parse(f.clone()), "parse");
                or_die(r.decode::<ProduceRequest>(), "decode")
                    .topic_data
                    .len()
            })
        });
        let mut resp = ProduceResponse::default();
        let mut tr = TopicProduceResponse::default();
        tr.name = topic();
        for p in 0..parts {
            let mut pr = PartitionProduceResponse::default();
            pr.index = p;
            pr.base_offset = 1_000_000 + i64::from(p);
            pr.log_append_time_ms = -1;
            pr.log_start_offset = 0;
            tr.partition_responses.push(pr);
        }
        resp.responses.push(tr);
        g.bench_function(BenchmarkId::new("encode response", name), |bench| {
            bench.iter(|| {
                or_die(
                    encode_response(ApiKey::Produce, PRODUCE_V, 7, &resp),
                    "encode",
                )
                .len()
            })
        });
    }
    g.finish();
}

fn bench_fetch(c: &mut Criterion) {
    let mut g = c.benchmark_group("fetch request");
    let dir = or_die(tempfile::tempdir(), "tempdir");
    let path = dir.path().join("00000000000000000000.log");
    or_die(std::fs::write(&path, vec![0u8; 1 << 20]), "write log");
    let file = Arc::new(or_die(std::fs::File::open(&path), "open log"));
    for parts in [1i32, 100] {
        let mut ft = FetchTopic::default();
        ft.topic = topic();
        for p in 0..parts {
            let mut fp = FetchPartition::default();
            fp.partition = p;
            fp.current_leader_epoch = -1;
            fp.fetch_offset = 123_456;
            fp.last_fetched_epoch = -1;
            fp.log_start_offset = -1;
            fp.partition_max_bytes = 1 << 20;
            ft.partitions.push(fp);
        }
        let mut req = FetchRequest::default();
        req.replica_id = (-1).into();
        req.max_wait_ms = 500;
        req.min_bytes = 1;
        req.max_bytes = 50 << 20;
        req.session_epoch = -1;
        req.topics.push(ft);
        let f = frame(ApiKey::Fetch, FETCH_V, &req);
        let name = format!("{parts} partitions");
        g.throughput(Throughput::Bytes(f.len() as u64));
        g.bench_with_input(BenchmarkId::new("parse + decode", &name), &f, |bench, f| {
            bench.iter(|| {
                let r = or_die(RequestFrame::parse(f.clone()), "parse");
                or_die(r.decode::<FetchRequest>(), "decode").topics.len()
            })
        });
        // Response: per partition one 1 MiB / parts file region (sent with
        // sendfile, so only the header bytes are encoded).
        let region = (1u64 << 20) / parts as u64;
        let topics = || {
            vec![FetchTopicOut {
                name: Some(Arc::from("bench-topic")),
                topic_id: uuid::Uuid::nil(),
                partitions: (0..parts)
                    .map(|p| FetchPartitionOut {
                        partition: p,
                        error_code: 0,
                        high_watermark: 1_000_000,
                        last_stable_offset: 1_000_000,
                        log_start_offset: 0,
                        aborted_transactions: None,
                        current_leader: None,
                        diverging_epoch: None,
                        regions: vec![FileRegion {
                            file: file.clone(),
                            position: p as u64 * region,
                            len: region,
                        }],
                    })
                    .collect(),
            }]
        };
        let t = topics();
        g.throughput(Throughput::Bytes(1 << 20));
        g.bench_function(
            BenchmarkId::new("encode response (1 MiB as file regions)", &name),
            |bench| bench.iter(|| encode_fetch_response(FETCH_V, 7, 0, 0, &t, 0, &[]).len()),
        );
    }
    g.finish();
}

/// xorshift64: deterministic offsets without a dependency.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// 1,000 ACLs as a multi-tenant cluster has them: for each of 100 users,
/// literal WRITE and READ on 4 topics of its own, a prefixed READ on its
/// team's topics and a consumer group ACL (600 literal topic ACLs, 100
/// prefixed, 300 group ACLs), plus a `*` DESCRIBE for everyone.
fn thousand_acls() -> AclIndex {
    let mut acls = Vec::new();
    let mut add = |rt, name: String, pt, principal: String, op, perm| {
        acls.push(AclBinding {
            resource_type: rt,
            resource_name: name,
            pattern_type: pt,
            principal,
            host: "*".into(),
            operation: op,
            permission: perm,
        })
    };
    for u in 0..100 {
        let user = format!("User:tenant-{u}");
        for t in 0..3 {
            add(
                ResourceType::Topic,
                format!("tenant-{u}.events-{t}"),
                PatternType::Literal,
                user.clone(),
                Operation::Write,
                Permission::Allow,
            );
            add(
                ResourceType::Topic,
                format!("tenant-{u}.events-{t}"),
                PatternType::Literal,
                user.clone(),
                Operation::Read,
                Permission::Allow,
            );
        }
        add(
            ResourceType::Topic,
            format!("team-{}.", u % 10),
            PatternType::Prefixed,
            user.clone(),
            Operation::Read,
            Permission::Allow,
        );
        for g in 0..3 {
            add(
                ResourceType::Group,
                format!("tenant-{u}.group-{g}"),
                PatternType::Literal,
                user.clone(),
                Operation::Read,
                Permission::Allow,
            );
        }
    }
    add(
        ResourceType::Topic,
        "*".into(),
        PatternType::Literal,
        "User:*".into(),
        Operation::Describe,
        Permission::Allow,
    );
    assert_eq!(acls.len(), 1_001);
    AclIndex::new(&acls, vec!["User:admin".into()], false)
}

fn bench_authorizer(c: &mut Criterion) {
    let mut g = c.benchmark_group("authorizer, 1,000 ACLs");
    let ix = thousand_acls();
    let check = |principal: &str, topic: &str| {
        ix.authorize(
            principal,
            "10.0.0.7",
            Operation::Write,
            ResourceType::Topic,
            topic,
        )
    };
    assert!(check("User:tenant-42", "tenant-42.events-1").allowed());
    assert!(!check("User:tenant-43", "tenant-42.events-1").allowed());
    g.bench_function("WRITE on a topic, allowed", |bench| {
        bench.iter(|| check("User:tenant-42", "tenant-42.events-1"))
    });
    g.bench_function("WRITE on a topic, denied", |bench| {
        bench.iter(|| check("User:tenant-43", "tenant-42.events-1"))
    });
    g.bench_function("WRITE on a topic, super user", |bench| {
        bench.iter(|| check("User:admin", "tenant-42.events-1"))
    });
    g.finish();
}

fn bench_index(c: &mut Criterion) {
    let mut g = c.benchmark_group("offset lookup");
    let dir = or_die(tempfile::tempdir(), "tempdir");
    // Many small batches: 20 000 batches of 4 records x 100 B (~600 B each,
    // one index entry per 4 KiB = every ~7 batches), in one segment.
    let b = batch(4, 100);
    let v = or_die(validate_batches(&b, usize::MAX), "validate");
    let cfg = LogConfig {
        segment_bytes: 1 << 30,
        ..LogConfig::default()
    };
    let mut log = or_die(PartitionLog::open(&dir.path().join("idx-0"), cfg), "open");
    let nbatches = 20_000u64;
    for _ in 0..nbatches {
        or_die(log.append(&b, &v, 0, 0), "append");
    }
    let end = nbatches * 4;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    g.throughput(Throughput::Elements(1));
    g.bench_function("PartitionLog::read, random offset, 1 batch", |bench| {
        bench.iter(|| {
            let off = rng.below(end) as i64;
            or_die(log.read(off, 1, true), "read").bytes
        })
    });
    // The offset index alone: 100 000 entries, binary search.
    let mut idx = or_die(
        OffsetIndex::open(&dir.path().join("bench.index"), 0, 1 << 20),
        "index",
    );
    for i in 0..100_000u32 {
        or_die(
            idx.append(i64::from(i) * 7 + 6, i * 4096 + 1),
            "index append",
        );
    }
    let last = 100_000 * 7;
    g.bench_function("OffsetIndex::lookup, 100k entries", |bench| {
        bench.iter(|| idx.lookup(rng.below(last) as i64))
    });
    g.finish();
}

/// Two executors joined by a full mesh; the first runs `n` ping-pongs on
/// request and reports the elapsed time.
struct MeshPair {
    cmd: mpsc::Sender<u64>,
    done: mpsc::Receiver<Duration>,
    handles: Vec<glommio::ExecutorJoinHandle<()>>,
}

impl MeshPair {
    fn start() -> MeshPair {
        let mesh: MeshBuilder<u64, _> = MeshBuilder::full(2, 1024);
        let (cmd, cmd_rx) = mpsc::channel::<u64>();
        let (done_tx, done) = mpsc::channel::<Duration>();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let place = |i: usize| {
            if cores >= 2 {
                Placement::Fixed(i)
            } else {
                Placement::Unbound
            }
        };
        let m = mesh.clone();
        let a = LocalExecutorBuilder::new(place(0))
            .name("mesh-a")
            .spawn(move || async move {
                let (tx, rx) = or_die(m.join().await.map_err(|_| "join"), "mesh");
                let peer = 1 - tx.peer_id();
                while let Ok(n) = cmd_rx.recv() {
                    if n == 0 {
                        break;
                    }
                    let t = Instant::now();
                    for i in 1..=n {
                        if tx.send_to(peer, i).await.is_err() {
                            panic!("send");
                        }
                        match rx.recv_from(peer).await {
                            Ok(Some(_)) => {}
                            _ => panic!("recv"),
                        }
                    }
                    let _ = done_tx.send(t.elapsed());
                }
                let _ = tx.send_to(peer, 0).await;
            });
        let b = LocalExecutorBuilder::new(place(1))
            .name("mesh-b")
            .spawn(move || async move {
                let (tx, rx) = or_die(mesh.join().await.map_err(|_| "join"), "mesh");
                let peer = 1 - tx.peer_id();
                while let Ok(Some(v)) = rx.recv_from(peer).await {
                    if v == 0 || tx.send_to(peer, v).await.is_err() {
                        break;
                    }
                }
            });
        MeshPair {
            cmd,
            done,
            handles: vec![or_die(a, "executor a"), or_die(b, "executor b")],
        }
    }

    fn run(&self, n: u64) -> Duration {
        if n == 0 {
            return Duration::ZERO;
        }
        or_die(self.cmd.send(n), "command");
        or_die(self.done.recv(), "result")
    }

    fn stop(self) {
        let _ = self.cmd.send(0);
        for h in self.handles {
            let _ = h.join();
        }
    }
}

fn bench_mesh(c: &mut Criterion) {
    let mut g = c.benchmark_group("cross-shard channel");
    let pair = MeshPair::start();
    g.throughput(Throughput::Elements(1));
    g.bench_function("round trip (2 executors, full mesh)", |bench| {
        bench.iter_custom(|iters| pair.run(iters))
    });
    g.finish();
    pair.stop();
}

criterion_group!(
    benches,
    bench_produce,
    bench_fetch,
    bench_index,
    bench_mesh,
    bench_authorizer
);
criterion_main!(benches);
