//! The in-process harness: a whole broker (2 shards on their own threads,
//! the channel mesh, the single-node metadata quorum, a temporary data
//! directory) started inside the test process with `fjord::boot::start`,
//! and driven by running work on its shards (`Node::on`): the owners'
//! typed operations, the coordinators, the partitions. No child process,
//! no client, no TCP on the driven path, so a scenario runs in about the
//! time its broker takes to start. At most two nodes run at once (a place
//! taken for a node's life, as `cargo test` runs two process tests at once
//! on two cores); each has two shards. `FJORD_TEST_LOG=1` (with `RUST_LOG`)
//! prints the nodes' logs.
//!
//! This file: the node (start, stop, restart), topics, produce, fetch,
//! ListOffsets, partitions, and [`Node::call`] for the few answers only a
//! handler gives (version-dependent codes). `txn.rs`: the transaction
//! coordinator; `groups.rs`: the group coordinator; `records.rs`: record
//! batches to send and records as stored; `files.rs`: segment files.
//!
//! Nothing here sleeps for correctness: a scenario that waits for the
//! broker polls its state with [`Node::wait_until`].

#![allow(dead_code)]

pub mod files;
pub mod groups;
pub mod records;
pub mod txn;

pub use files::*;
pub use records::*;

use std::future::Future;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fjord::cluster::control::{ControllerReply, ControllerRequest, NewTopic};
use fjord::shard::owner::fetch::{OwnerRead, PartitionRead};
use fjord::shard::owner::offsets::OffsetSpec;
use fjord::shard::owner::produce::{AppendAnswer, PartitionAppend, Slot};
use fjord::shard::partition::Partition;
use fjord::shard::Shard;

pub use fjord::error::KafkaCode;

/// The nodes running in this process, and a signal when one stops.
static RUNNING: (Mutex<usize>, std::sync::Condvar) = (Mutex::new(0), std::sync::Condvar::new());

/// How many nodes may run at once.
const AT_ONCE: usize = 2;

/// A place among the nodes running, given back on drop.
struct Turn;

impl Turn {
    fn take() -> Turn {
        let (count, freed) = &RUNNING;
        let mut n = count.lock().unwrap_or_else(|p| p.into_inner());
        while *n >= AT_ONCE {
            n = freed.wait(n).unwrap_or_else(|p| p.into_inner());
        }
        *n += 1;
        Turn
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let (count, freed) = &RUNNING;
        *count.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
        freed.notify_one();
    }
}

/// How long [`Node::wait_until`] waits before it fails the test.
pub const SETTLE: Duration = Duration::from_secs(30);

/// A broker running in this process.
pub struct Node {
    node: Option<fjord::boot::Node>,
    dir: tempfile::TempDir,
    overrides: Vec<String>,
    _turn: Turn,
}

impl Node {
    /// Starts a node with 2 shards on `127.0.0.1:0`, its data in a new
    /// temporary directory, with `overrides` (`key=value`, Kafka's names).
    pub fn start(overrides: &[&str]) -> Node {
        let turn = Turn::take();
        if std::env::var("FJORD_TEST_LOG").is_ok() {
            let _ = env_logger::builder().try_init();
        }
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
            txn_operation: fjord::shard::error::TransactionSupportedOperation::DefaultError,
        };
        self.on(from, move |s| async move {
            let owner = s.owner(&work.topic, partition);
            let (tx, _rx) = fjord::shard::home::reply_channel();
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

/// Wall-clock ms since the Unix epoch.
pub fn now_ms() -> i64 {
    fjord::shard::now_ms()
}
