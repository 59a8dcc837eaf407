//! The in-process harness: a whole broker (2 shards on their own threads,
//! the channel mesh, the single-node metadata quorum, a temporary data
//! directory) started inside the test process with `fjord::boot::start`,
//! and driven by running work on its shards (`Node::on`): the owners'
//! typed operations, the coordinators, the partitions. No child process,
//! no client, no TCP on the driven path, so a scenario runs in about the
//! time its broker takes to start. Nodes run one at a time (a process-wide
//! lock held for a node's life): each has two shards, and the machine has
//! two cores.
//!
//! This file: the node (start, stop, restart, files), topics, produce,
//! fetch, ListOffsets, partitions, and [`Node::call`] for the few answers
//! only a handler gives (version-dependent codes). `txn.rs`: the
//! transaction coordinator; `groups.rs`: the group coordinator.
//!
//! Nothing here sleeps for correctness: a scenario that waits for the
//! broker polls its state with [`Node::wait_until`].

#![allow(dead_code)]

pub mod groups;
pub mod txn;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fjord::cluster::control::{ControllerReply, ControllerRequest, NewTopic};
use fjord::shard::owner::fetch::{OwnerRead, PartitionRead};
use fjord::shard::owner::offsets::OffsetSpec;
use fjord::shard::owner::produce::{AppendAnswer, PartitionAppend, Slot};
use fjord::shard::partition::Partition;
use fjord::shard::Shard;

pub use fjord::error::KafkaCode;

/// One node at a time in this process.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How long [`Node::wait_until`] waits before it fails the test.
pub const SETTLE: Duration = Duration::from_secs(30);

/// A broker running in this process.
pub struct Node {
    node: Option<fjord::boot::Node>,
    dir: tempfile::TempDir,
    overrides: Vec<String>,
    _turn: MutexGuard<'static, ()>,
}

impl Node {
    /// Starts a node with 2 shards on `127.0.0.1:0`, its data in a new
    /// temporary directory, with `overrides` (`key=value`, Kafka's names).
    pub fn start(overrides: &[&str]) -> Node {
        let turn = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let dir = tempfile::tempdir().expect("temporary data directory");
        let mut node = Node {
            node: None,
            dir,
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
            _turn: turn,
        };
        node.boot();
        node
    }

    fn boot(&mut self) {
        assert!(self.node.is_none(), "the node is already running");
        let mut config = fjord::config::Config::default();
        let data = self.data_dir();
        let mut set = |k: &str, v: &str| {
            config
                .set(k, v)
                .unwrap_or_else(|e| panic!("setting {k}={v}: {e}"))
        };
        set("listeners", "PLAINTEXT://127.0.0.1:0");
        set("log.dirs", data.to_str().expect("utf-8 path"));
        for o in &self.overrides {
            let (k, v) = o.split_once('=').expect("override is key=value");
            set(k, v);
        }
        config.shards = Some(2);
        self.node = Some(fjord::boot::start(config).expect("the node starts"));
    }

    /// The address the node's listener is bound to.
    pub fn address(&self) -> std::net::SocketAddr {
        self.node.as_ref().expect("the node is running").address()
    }

    /// The node's data directory (`log.dirs`).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The directory of `topic`-`partition`.
    pub fn partition_dir(&self, topic: &str, partition: i32) -> PathBuf {
        self.data_dir().join(format!("{topic}-{partition}"))
    }

    /// The first segment file of `topic`-`partition`.
    pub fn segment_path(&self, topic: &str, partition: i32) -> PathBuf {
        self.partition_dir(topic, partition)
            .join("00000000000000000000.log")
    }

    /// Runs `f` on shard `shard` and gives its result.
    pub fn on<R, F, Fut>(&self, shard: usize, f: F) -> R
    where
        R: Send + 'static,
        F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
        Fut: Future<Output = R> + 'static,
    {
        self.node
            .as_ref()
            .expect("the node is running")
            .on_shard(shard, f)
            .unwrap_or_else(|e| panic!("shard {shard}: {e}"))
    }

    /// Starts `f` on shard `shard` without waiting for it (a request the
    /// coordinator parks, such as a JoinGroup during a rebalance).
    pub fn spawn_on<R, F, Fut>(&self, shard: usize, f: F) -> Pending<R>
    where
        R: Send + 'static,
        F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
        Fut: Future<Output = R> + 'static,
    {
        self.on(shard, move |s| async move {
            let (tx, rx) = futures_channel::oneshot::channel();
            fjord::shard::stall::spawn_local("harness", async move {
                let _ = tx.send(f(s).await);
            })
            .detach();
            Pending(rx)
        })
    }

    /// Stops the node in order (as SIGTERM does); [`Node::start_again`]
    /// starts it on the same data directory.
    pub fn stop(&mut self) {
        if let Some(n) = self.node.take() {
            n.stop().expect("a clean stop");
        }
    }

    /// Starts the stopped node again on its data directory.
    pub fn start_again(&mut self) {
        self.boot();
    }

    /// The overrides of the next start (the running node keeps its own).
    pub fn set_overrides(&mut self, overrides: &[&str]) {
        self.overrides = overrides.iter().map(|s| s.to_string()).collect();
    }

    /// Stops the node and starts it again on the same data directory.
    pub fn restart(&mut self) {
        self.stop();
        self.boot();
    }

    /// Sends `req` to the active controller from shard 0 and gives its
    /// answer.
    pub fn controller(&self, req: ControllerRequest) -> ControllerReply {
        self.on(0, move |s| async move {
            fjord::shard::submit(&s, req)
                .await
                .map_err(|e| e.to_string())
        })
        .unwrap_or_else(|e| panic!("controller call: {e}"))
    }

    /// Creates `topic` with `partitions` partitions (replication factor 1)
    /// and `configs`, through the controller as CreateTopics does, and
    /// waits until both shards serve its partitions.
    pub fn create_topic(&self, topic: &str, partitions: i32, configs: &[(&str, &str)]) {
        let t = NewTopic {
            name: topic.to_string(),
            partitions,
            replication_factor: 1,
            assignments: None,
            topic_id: None,
            configs: configs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let reply = self.controller(ControllerRequest::CreateTopics {
            topics: vec![t],
            validate_only: false,
        });
        match reply {
            ControllerReply::CreateTopics(results) => {
                for r in results {
                    assert!(r.is_ok(), "CreateTopics {topic}: {r:?}");
                }
            }
            other => panic!("CreateTopics {topic}: {other:?}"),
        }
        self.wait_served(topic, partitions);
    }

    /// Waits until both shards serve the partitions `0..partitions` of
    /// `topic` they own.
    pub fn wait_served(&self, topic: &str, partitions: i32) {
        let name: Arc<str> = Arc::from(topic);
        self.wait_until(&format!("the partitions of {topic} open"), || {
            (0..2).all(|shard| {
                let name = name.clone();
                self.on(shard, move |s| async move {
                    (0..partitions)
                        .filter(|p| s.owner(&name, *p) == s.id)
                        .all(|p| s.partition(&name, p).is_some_and(|p| p.is_leader()))
                })
            })
        });
    }

    /// Sets `configs` on `topic` (the other overrides kept), through the
    /// controller as IncrementalAlterConfigs SET does, and waits until both
    /// shards apply them.
    pub fn set_topic_configs(&self, topic: &str, configs: &[(&str, &str)]) {
        let name = topic.to_string();
        let mut all = self
            .on(0, move |s| async move {
                s.metadata().topic(&name).map(|t| t.configs.clone())
            })
            .unwrap_or_else(|| panic!("no topic {topic}"));
        for (k, v) in configs {
            all.insert(k.to_string(), v.to_string());
        }
        let want = all.clone();
        let reply = self.controller(ControllerRequest::AlterTopicConfigs {
            topic: topic.to_string(),
            configs: all,
            validate_only: false,
        });
        assert!(
            matches!(&reply, ControllerReply::AlterTopicConfigs(Ok(_))),
            "AlterTopicConfigs {topic}: {reply:?}"
        );
        let name: Arc<str> = Arc::from(topic);
        self.wait_until(&format!("the configs of {topic} applied"), || {
            (0..2).all(|shard| {
                let (name, want) = (name.clone(), want.clone());
                self.on(shard, move |s| async move {
                    s.metadata().topic(&name).map(|t| t.configs.clone()) == Some(want)
                })
            })
        });
    }

    /// Runs `f` with `topic`-`partition` on its owner shard.
    pub fn with_partition<R, F>(&self, topic: &str, partition: i32, f: F) -> R
    where
        R: Send + 'static,
        F: FnOnce(&Rc<Partition>) -> R + Send + 'static,
    {
        self.on_partition(topic, partition, move |p| async move { f(&p) })
    }

    /// Runs `f` (async) with `topic`-`partition` on its owner shard.
    pub fn on_partition<R, F, Fut>(&self, topic: &str, partition: i32, f: F) -> R
    where
        R: Send + 'static,
        F: FnOnce(Rc<Partition>) -> Fut + Send + 'static,
        Fut: Future<Output = R> + 'static,
    {
        let name = topic.to_string();
        let owner = fjord::cluster::metadata::owner_shard(topic, partition, 2);
        self.on(owner, move |s| async move {
            let part = s
                .partition(&name, partition)
                .unwrap_or_else(|| panic!("{name}-{partition} is not open"));
            f(part).await
        })
    }

    /// (log start offset, high watermark) of `topic`-`partition`.
    pub fn watermarks(&self, topic: &str, partition: i32) -> (i64, i64) {
        self.with_partition(topic, partition, |p| {
            (p.log_start_offset(), p.high_watermark())
        })
    }

    /// (high watermark, last stable offset) of `topic`-`partition`.
    pub fn hw_and_lso(&self, topic: &str, partition: i32) -> (i64, i64) {
        self.with_partition(topic, partition, |p| {
            (p.high_watermark(), p.last_stable_offset())
        })
    }

    /// Appends `records` (whole RecordBatch v2 bytes) to `topic`-`partition`
    /// through its owner, sent from shard `from` (acks=all with a 10 s
    /// deadline; `transactional_id` as the request gives it).
    pub fn produce(
        &self,
        from: usize,
        topic: &str,
        partition: i32,
        records: Bytes,
        transactional_id: Option<&str>,
    ) -> AppendAnswer {
        self.produce_acks(from, topic, partition, records, transactional_id, true)
    }

    /// As [`Node::produce`], with acks=all (`acks_all`) or acks=1.
    pub fn produce_acks(
        &self,
        from: usize,
        topic: &str,
        partition: i32,
        records: Bytes,
        transactional_id: Option<&str>,
        acks_all: bool,
    ) -> AppendAnswer {
        let work = PartitionAppend {
            slot: Slot::default(),
            topic: Arc::from(topic),
            partition,
            records,
            transactional_id: transactional_id.map(Arc::from),
        };
        self.on(from, move |s| async move {
            let owner = s.owner(&work.topic, partition);
            let (tx, _rx) = futures_channel::oneshot::channel();
            let deadline = acks_all.then(|| Instant::now() + Duration::from_secs(10));
            let mut answers =
                fjord::shard::owner::produce::append_on(&s, owner, vec![work], deadline, tx).await;
            answers.pop().expect("one answer")
        })
    }

    /// Appends `records` and asserts the append succeeded; gives its base
    /// offset.
    pub fn append(&self, topic: &str, partition: i32, records: Bytes) -> i64 {
        let a = self.produce(1, topic, partition, records, None);
        assert!(
            a.error.is_none(),
            "append to {topic}-{partition}: {:?}",
            a.error
        );
        a.base_offset
    }

    /// Reads `topic`-`partition` from `offset` (up to 1 MiB) as a consumer
    /// with `isolation_level` (0 READ_UNCOMMITTED, 1 READ_COMMITTED),
    /// through its owner, and gives the owner's read with its bytes.
    pub fn fetch(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        isolation_level: i8,
    ) -> (OwnerRead, Bytes) {
        let read = PartitionRead {
            topic: Arc::from(topic),
            partition,
            fetch_offset: offset,
            partition_max_bytes: 1 << 20,
            isolation_level,
            current_leader_epoch: None,
            requester: fjord::cluster::leadership::Requester::Client,
            last_fetched_epoch: None,
        };
        self.on(0, move |s| async move {
            let owner = s.owner(&read.topic, partition);
            let mut reads = fjord::shard::owner::fetch::read_on(&s, owner, vec![read], 1 << 20)
                .await
                .expect("the owner answers");
            let r = reads.pop().expect("one read");
            let mut bytes = Vec::new();
            for region in &r.regions {
                let mut b = vec![0u8; region.len as usize];
                std::os::unix::fs::FileExt::read_exact_at(&*region.file, &mut b, region.position)
                    .expect("read the region");
                bytes.extend_from_slice(&b);
            }
            (r, Bytes::from(bytes))
        })
    }

    /// Every record a consumer with `isolation_level` reads from `offset`
    /// to the end it may read to (the high watermark, or the LSO under
    /// READ_COMMITTED, where the records of aborted transactions are
    /// dropped as Kafka's consumer drops them, with the aborted
    /// transactions the owner lists). Control records are left out;
    /// records of a batch before `offset` too.
    pub fn read_all(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        isolation_level: i8,
    ) -> Vec<Stored> {
        let mut out = Vec::new();
        let mut at = offset;
        let mut aborted = Vec::new();
        loop {
            let (read, bytes) = self.fetch(topic, partition, at, isolation_level);
            assert!(
                read.error.is_none(),
                "read {topic}-{partition}@{at}: {:?}",
                read.error
            );
            aborted.extend(read.aborted_transactions.clone().unwrap_or_default());
            if bytes.is_empty() {
                break;
            }
            let batch = stored(&bytes);
            at = read.end_offset;
            out.extend(batch);
        }
        let mut aborted: Vec<(i64, i64)> = aborted;
        aborted.sort_by_key(|a| a.1);
        aborted.dedup();
        let mut dropping: std::collections::HashSet<i64> = Default::default();
        let mut next = 0;
        let mut kept = Vec::new();
        for r in out {
            while next < aborted.len() && aborted[next].1 <= r.offset {
                dropping.insert(aborted[next].0);
                next += 1;
            }
            if r.control {
                dropping.remove(&r.producer_id);
            } else if r.offset >= offset && !dropping.contains(&r.producer_id) {
                kept.push(r);
            }
        }
        kept
    }

    /// The values [`Node::read_all`] gives.
    pub fn values(&self, topic: &str, partition: i32, offset: i64, isolation: i8) -> Vec<String> {
        self.read_all(topic, partition, offset, isolation)
            .into_iter()
            .map(|r| r.value.unwrap_or_default())
            .collect()
    }

    /// ListOffsets for `topic`-`partition` (`ts` as the request gives it:
    /// -1 latest, -2 earliest, a timestamp otherwise) with
    /// `isolation_level`, through its owner; the offset found, None for no
    /// offset (Kafka's -1).
    pub fn list_offset(&self, topic: &str, partition: i32, ts: i64, isolation: i8) -> Option<i64> {
        let topic: Arc<str> = Arc::from(topic);
        let spec = OffsetSpec::from_wire(ts).expect("a known timestamp");
        self.on(0, move |s| async move {
            fjord::shard::owner::offsets::list_offset(&s, topic, partition, spec, isolation, None)
                .await
                .map(|f| f.map(|f| f.offset))
                .unwrap_or_else(|e| panic!("ListOffsets: {e}"))
        })
    }

    /// Handles `req` (`version`) on shard `shard` as a connection there
    /// would (`fjord::handlers::dispatch`, no socket) and gives the decoded
    /// answer. For the answers only a handler decides (codes by request
    /// version, names a request gives that no coordinator knows); the
    /// scenarios otherwise drive the coordinators and owners directly.
    pub fn call<R>(&self, shard: usize, version: i16, req: R) -> R::Response
    where
        R: kafka_protocol::protocol::Request + Send + 'static,
        R::Response: Send + 'static,
    {
        use bytes::Buf;
        use kafka_protocol::messages::{RequestHeader, ResponseHeader};
        use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
        let mut buf = bytes::BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(1)
            .with_client_id(Some(StrBytes::from_static_str("fjord-it")))
            .encode(&mut buf, R::header_version(version))
            .expect("encode request header");
        req.encode(&mut buf, version).expect("encode request");
        let mut frame = fjord::protocol::RequestFrame::parse(buf.freeze()).expect("a request");
        frame.peer = Some(([127, 0, 0, 1], 40000).into());
        let outcome = self.on(shard, move |s| async move {
            match fjord::handlers::dispatch(&s, frame).await {
                fjord::handlers::Outcome::Respond(r) => Ok(r
                    .chunks
                    .into_iter()
                    .map(|c| match c {
                        fjord::protocol::ResponseChunk::Bytes(b) => b,
                        fjord::protocol::ResponseChunk::File(_) => panic!("a file region"),
                    })
                    .collect::<Vec<Bytes>>()),
                other => Err(format!("{other:?}")),
            }
        });
        let chunks = outcome.unwrap_or_else(|e| panic!("api key {} v{version}: {e}", R::KEY));
        let mut resp = Bytes::from(chunks.concat());
        resp.advance(4);
        ResponseHeader::decode(&mut resp, R::Response::header_version(version))
            .expect("response header");
        let body = R::Response::decode(&mut resp, version).expect("response body");
        assert_eq!(resp.remaining(), 0, "trailing bytes");
        body
    }

    /// Polls `cond` every 10 ms until it holds; fails the test after
    /// [`SETTLE`].
    pub fn wait_until(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + SETTLE;
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Polls `f` every 10 ms until it gives `Ok`, and gives that; fails the
    /// test with the last `Err` after [`SETTLE`].
    pub fn poll<T>(&self, what: &str, mut f: impl FnMut() -> Result<T, String>) -> T {
        let deadline = Instant::now() + SETTLE;
        loop {
            match f() {
                Ok(t) => return t,
                Err(e) => assert!(
                    Instant::now() < deadline,
                    "timed out waiting for {what}: {e}"
                ),
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(n) = self.node.take() {
            let _ = n.stop();
        }
    }
}

/// The answer of work started with [`Node::spawn_on`].
pub struct Pending<R>(futures_channel::oneshot::Receiver<R>);

impl<R> Pending<R> {
    /// The answer, if it came.
    pub fn try_take(&mut self) -> Option<R> {
        self.0.try_recv().expect("the work was dropped")
    }

    /// Waits for the answer (up to [`SETTLE`]).
    pub fn wait(mut self, node: &Node) -> R {
        node.poll("a parked request's answer", || {
            self.try_take().ok_or_else(|| "no answer yet".into())
        })
    }
}

/// One RecordBatch v2 of `n` records `k{i}`/`v{i}` (timestamps from `ts`),
/// of producer (`pid`, `epoch`) from sequence `seq` (-1 for none),
/// transactional as asked.
pub fn batch(pid: i64, epoch: i16, seq: i32, n: i64, ts: i64, transactional: bool) -> Bytes {
    let recs: Vec<Rec> = (0..n)
        .map(|i| (Some(format!("k{i}")), Some(format!("v{i}")), ts + i))
        .collect();
    encode(pid, epoch, seq, &recs, transactional, false)
}

/// One RecordBatch v2 without a producer, of records (key, value) with
/// timestamps from `ts` (`None` key or value: null; a null value is a
/// tombstone).
pub fn keyed(kv: &[(Option<&str>, Option<&str>)], ts: i64) -> Bytes {
    let recs: Vec<Rec> = kv
        .iter()
        .zip(ts..)
        .map(|((k, v), t)| (k.map(str::to_string), v.map(str::to_string), t))
        .collect();
    encode(-1, -1, -1, &recs, false, false)
}

/// One batch without a producer of `values` (keys `k`), timestamps from
/// `ts`.
pub fn values_batch(values: &[String], ts: i64) -> Bytes {
    let kv: Vec<(Option<&str>, Option<&str>)> = values
        .iter()
        .map(|v| (Some("k"), Some(v.as_str())))
        .collect();
    keyed(&kv, ts)
}

/// One record to encode: key, value, timestamp (ms).
pub type Rec = (Option<String>, Option<String>, i64);

/// Encodes one RecordBatch v2 of producer (`pid`, `epoch`) from sequence
/// `seq` (-1: none); `control`: a control batch, whose records get the
/// COMMIT marker key.
pub fn encode(
    pid: i64,
    epoch: i16,
    seq: i32,
    recs: &[Rec],
    transactional: bool,
    control: bool,
) -> Bytes {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let recs: Vec<Record> = recs
        .iter()
        .enumerate()
        .map(|(i, (k, v, ts))| Record {
            transactional,
            control,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: pid,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // The encoder keeps records of one batch while their sequences
            // follow each other: a batch without a producer starts at -1.
            sequence: if seq < 0 {
                i as i32 - 1
            } else {
                seq + i as i32
            },
            timestamp: *ts,
            key: if control {
                Some(Bytes::from_static(&[0, 0, 0, 1]))
            } else {
                k.clone().map(Bytes::from)
            },
            value: v.clone().map(Bytes::from),
            headers: Default::default(),
        })
        .collect();
    let mut buf = bytes::BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, recs.iter(), &opts).expect("encode batch");
    buf.freeze()
}

/// A record as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// Offset.
    pub offset: i64,
    /// Key, as text.
    pub key: Option<String>,
    /// Value, as text.
    pub value: Option<String>,
    /// Timestamp (ms).
    pub timestamp: i64,
    /// The batch's timestamp type is LogAppendTime.
    pub log_append_time: bool,
    /// Producer id (-1 for none).
    pub producer_id: i64,
    /// A control record (a transaction marker).
    pub control: bool,
}

/// Every record of `bytes` (whole stored batches), control records too.
pub fn stored(bytes: &Bytes) -> Vec<Stored> {
    let text = |b: Option<Bytes>| b.map(|b| String::from_utf8_lossy(&b).to_string());
    let mut buf = bytes.clone();
    let mut out = Vec::new();
    while !buf.is_empty() {
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut buf)
            .expect("stored batches decode");
        for r in set.records {
            out.push(Stored {
                offset: r.offset,
                log_append_time: r.timestamp_type
                    == kafka_protocol::records::TimestampType::LogAppend,
                timestamp: r.timestamp,
                producer_id: r.producer_id,
                control: r.control,
                key: text(r.key),
                value: text(r.value),
            });
        }
    }
    out
}

/// The (offset, value) of every record of `bytes` (whole stored batches),
/// control records left out.
pub fn records(bytes: &Bytes) -> Vec<(i64, String)> {
    stored(bytes)
        .into_iter()
        .filter(|r| !r.control)
        .map(|r| (r.offset, r.value.unwrap_or_default()))
        .collect()
}

/// `(position, base offset, record count, length)` of every whole batch of
/// a segment file, read from its headers.
pub fn segment_batches(path: &Path) -> Vec<(usize, i64, i64, usize)> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos + 61 <= data.len() {
        let at = |i: usize, n: usize| &data[pos + i..pos + i + n];
        let base = i64::from_be_bytes(at(0, 8).try_into().expect("8 bytes"));
        let len = i32::from_be_bytes(at(8, 4).try_into().expect("4 bytes")) as usize + 12;
        if pos + len > data.len() {
            break;
        }
        let last_delta = i32::from_be_bytes(at(23, 4).try_into().expect("4 bytes")) as i64;
        out.push((pos, base, last_delta + 1, len));
        pos += len;
    }
    out
}

/// `.log` segment files of a partition directory, by base offset.
pub fn segment_files(dir: &Path) -> Vec<(i64, PathBuf)> {
    let mut v: Vec<(i64, PathBuf)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|e| {
            let e = e.expect("dir entry");
            let name = e.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".log")?;
            let digits = stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit());
            digits.then(|| (stem.parse().expect("digits"), e.path()))
        })
        .collect();
    v.sort();
    v
}

/// Files of a partition directory still waiting for removal (`*.deleted`).
pub fn pending_deletes(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read partition dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".deleted"))
        .collect()
}

/// Checks every `.log` file of a partition directory: each batch has magic
/// 2 and a valid CRC32C, the file ends at a batch boundary, offsets never
/// go back. Gives the number of batches.
pub fn assert_segments_intact(dir: &Path) -> usize {
    let mut next = i64::MIN;
    let mut total = 0;
    for (base, path) in segment_files(dir) {
        let data = std::fs::read(&path).expect("read segment");
        let batches = segment_batches(&path);
        let end = batches.last().map(|b| b.0 + b.3).unwrap_or(0);
        assert_eq!(end, data.len(), "{} ends inside a batch", path.display());
        for &(pos, offset, count, len) in &batches {
            let b = &data[pos..pos + len];
            assert_eq!(b[16], 2, "{} @{pos}: magic", path.display());
            let stored = u32::from_be_bytes(b[17..21].try_into().expect("4 bytes"));
            assert_eq!(
                stored,
                crc32c::crc32c(&b[21..]),
                "{} @{pos}: CRC32C",
                path.display()
            );
            assert!(
                offset >= base && offset >= next,
                "{} @{pos}: offset",
                path.display()
            );
            next = offset + count;
            total += 1;
        }
    }
    total
}

/// Wall-clock ms since the Unix epoch.
pub fn now_ms() -> i64 {
    fjord::shard::now_ms()
}
