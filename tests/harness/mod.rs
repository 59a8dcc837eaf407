//! The in-process harness: a whole broker (2 shards on their own threads,
//! the channel mesh, the single-node metadata quorum, a temporary data
//! directory) started inside the test process with `fjord::boot::start`,
//! and driven by running work on its shards (`Node::on`): the owners'
//! typed operations, the coordinators, the partitions. No child process,
//! no client, no TCP on the driven path, so a scenario runs in about the
//! time its broker takes to start. Nodes run one at a time (a process-wide
//! lock held for a node's life): each has two shards, and the machine has
//! two cores.

#![allow(dead_code)]

use std::future::Future;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fjord::cluster::control::{ControllerReply, ControllerRequest, NewTopic};
use fjord::shard::owner::fetch::{OwnerRead, PartitionRead};
use fjord::shard::owner::produce::{AppendAnswer, PartitionAppend, Slot};
use fjord::shard::Shard;

/// One node at a time in this process.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

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

    /// The node's data directory (`log.dirs`).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
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

    /// Stops the node in order (as SIGTERM does).
    pub fn stop(&mut self) {
        if let Some(n) = self.node.take() {
            n.stop().expect("a clean stop");
        }
    }

    /// Stops the node and starts it again on the same data directory.
    pub fn restart(&mut self) {
        self.stop();
        self.boot();
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
        let reply = self.on(0, move |s| async move {
            fjord::shard::submit(
                &s,
                ControllerRequest::CreateTopics {
                    topics: vec![t],
                    validate_only: false,
                },
            )
            .await
            .map_err(|e| e.to_string())
        });
        match reply {
            Ok(ControllerReply::CreateTopics(results)) => {
                for r in results {
                    assert!(r.is_ok(), "CreateTopics {topic}: {r:?}");
                }
            }
            other => panic!("CreateTopics {topic}: {other:?}"),
        }
        let name: Arc<str> = Arc::from(topic);
        self.wait_until("the topic's partitions open", || {
            let name = name.clone();
            (0..2).all(|shard| {
                let name = name.clone();
                self.on(shard, move |s| async move {
                    (0..partitions)
                        .filter(|p| s.owner(&name, *p) == s.id)
                        .all(|p| s.partition(&name, p).is_some())
                })
            })
        });
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
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut answers =
                fjord::shard::owner::produce::append_on(&s, owner, vec![work], Some(deadline), tx)
                    .await;
            answers.pop().expect("one answer")
        })
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

    /// Polls `cond` every 10 ms until it holds; fails the test after 30 s.
    pub fn wait_until(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
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

/// One RecordBatch v2 of `n` records `k{i}`/`v{i}` (timestamps from `ts`),
/// of producer (`pid`, `epoch`) from sequence `seq` (-1 for none),
/// transactional as asked.
pub fn batch(pid: i64, epoch: i16, seq: i32, n: i64, ts: i64, transactional: bool) -> Bytes {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let recs: Vec<Record> = (0..n)
        .map(|i| Record {
            transactional,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: pid,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i,
            // The encoder keeps records of one batch while their sequences
            // follow each other: a batch without a producer starts at -1.
            sequence: if seq < 0 {
                i as i32 - 1
            } else {
                seq + i as i32
            },
            timestamp: ts + i,
            key: Some(Bytes::from(format!("k{i}"))),
            value: Some(Bytes::from(format!("v{i}"))),
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

/// The (offset, value) of every record of `bytes` (whole stored batches),
/// control records left out.
pub fn records(bytes: &Bytes) -> Vec<(i64, String)> {
    let mut buf = bytes.clone();
    let mut out = Vec::new();
    while !buf.is_empty() {
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut buf)
            .expect("stored batches decode");
        for r in set.records {
            if !r.control {
                let v = r.value.map(|v| String::from_utf8_lossy(&v).to_string());
                out.push((r.offset, v.unwrap_or_default()));
            }
        }
    }
    out
}

/// Wall-clock ms since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
