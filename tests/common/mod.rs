//! Shared helpers for the integration tests: a [`Broker`] that runs the real
//! `fjord` binary on a random port with a temporary data directory, and
//! builders for rdkafka clients pointed at it.

#![allow(dead_code)]

pub mod certs;
pub mod cli;
pub mod cluster;
pub mod consumer_group;
pub mod kafka_peer;
pub mod layout;
pub mod ports;
pub mod proxy;
pub mod raw;

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::FutureProducer;
use rdkafka::{Offset, TopicPartitionList};

/// How long the broker may take to print its `listening on` line.
pub const STARTUP_DEADLINE: Duration = Duration::from_secs(30);
/// How long the broker may take to exit after SIGTERM.
pub const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(30);
/// Timeout for individual client calls (metadata, watermarks, admin).
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(15);

/// A running (or stopped) `fjord` process with its own data directory.
///
/// The data directory survives [`Broker::stop`], [`Broker::kill9`] and
/// [`Broker::restart`]; it is removed when the `Broker` is dropped. Each start
/// listens on a new random port, so clients must be rebuilt after a restart.
pub struct Broker {
    root: tempfile::TempDir,
    overrides: Vec<String>,
    envs: Vec<(String, String)>,
    child: Option<Child>,
    addr: String,
    starts: usize,
    /// Port for the next start; 0 picks a free one.
    next_port: u16,
    /// Every client listener of the current run: (name, `host:port`).
    listeners: Vec<(String, String)>,
}

impl Broker {
    /// Starts a broker with default settings.
    pub fn start() -> Broker {
        Broker::start_with(&[])
    }

    /// Starts a broker with `--override key=value` for each entry.
    pub fn start_with(overrides: &[&str]) -> Broker {
        Broker::start_with_env(overrides, &[])
    }

    /// Starts a broker with `--override key=value` for each entry and the
    /// environment variables `envs` (kept for restarts; see [`Broker::set_env`]).
    pub fn start_with_env(overrides: &[&str], envs: &[(&str, &str)]) -> Broker {
        Broker::start_prepared(overrides, envs, |_| {})
    }

    /// Like [`Broker::start_with_env`], with `prep` run on the (empty) data
    /// directory before the first start (e.g. to mount a file system there).
    pub fn start_prepared(
        overrides: &[&str],
        envs: &[(&str, &str)],
        prep: impl FnOnce(&Path),
    ) -> Broker {
        let root = tempfile::Builder::new()
            .prefix("fjord-it-")
            .tempdir()
            .expect("create temp dir");
        fs::create_dir_all(root.path().join("data")).expect("create data dir");
        prep(&root.path().join("data"));
        let mut b = Broker {
            root,
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
            envs: envs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            child: None,
            addr: String::new(),
            starts: 0,
            next_port: 0,
            listeners: Vec::new(),
        };
        b.spawn();
        b
    }

    /// Sets the environment variables of the next start (restart); an
    /// empty list starts it with the test's own environment only.
    pub fn set_env(&mut self, envs: &[(&str, &str)]) {
        self.envs = envs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    }

    /// Replaces the `--override` settings used by the next start (restart).
    pub fn set_overrides(&mut self, overrides: &[&str]) {
        self.overrides = overrides.iter().map(|s| s.to_string()).collect();
    }

    /// The data directory passed as `--log-dirs`.
    pub fn data_dir(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// `host:port` of the current run's listener `name` (as in
    /// `listeners`, upper-cased).
    pub fn listener(&self, name: &str) -> String {
        self.listeners
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a.clone())
            .unwrap_or_else(|| panic!("no listener {name} in {:?}", self.listeners))
    }

    /// `host:port` of the current run.
    pub fn bootstrap(&self) -> String {
        assert!(self.child.is_some(), "broker is not running");
        self.addr.clone()
    }

    /// The `host:port` of the metrics endpoint the current run logged
    /// (`metrics.listener`).
    pub fn metrics_address(&self) -> String {
        let text = self.stderr_text();
        let line = text
            .lines()
            .find(|l| l.contains("metrics endpoint on http://"))
            .unwrap_or_else(|| panic!("no metrics address logged:\n{text}"));
        let rest = line.split("http://").nth(1).expect("address");
        rest.trim_end_matches("/metrics").trim().to_string()
    }

    /// Process id of the current run.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("broker is not running").id()
    }

    fn stderr_path(&self, run: usize) -> PathBuf {
        self.root.path().join(format!("broker-stderr-{run}.log"))
    }

    fn spawn(&mut self) {
        assert!(self.child.is_none(), "broker already running");
        self.listeners.clear();
        self.starts += 1;
        let stderr = fs::File::create(self.stderr_path(self.starts)).expect("create stderr file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fjord"));
        cmd.arg("serve")
            .arg("--listeners")
            .arg(format!("PLAINTEXT://127.0.0.1:{}", self.next_port))
            .arg("--log-dirs")
            .arg(self.data_dir())
            .arg("--shards")
            .arg("2");
        for o in &self.overrides {
            cmd.arg("--override").arg(o);
        }
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr));
        let mut child = cmd.spawn().expect("spawn fjord");
        let stdout = child.stdout.take().expect("child stdout");
        let (tx, rx) = mpsc::channel::<String>();
        // Reads stdout for the whole life of the process so it never blocks
        // on a full pipe; only the first lines matter.
        thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let _ = tx.send(line.trim_end().to_string());
                    }
                }
            }
        });
        self.child = Some(child);
        let deadline = Instant::now() + STARTUP_DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix("fjord listener ") {
                        // `NAME (PROTOCOL) on host:port`
                        let name = rest.split_whitespace().next().unwrap_or_default();
                        let addr = rest.rsplit(' ').next().unwrap_or_default();
                        self.listeners.push((name.to_string(), addr.to_string()));
                        continue;
                    }
                    if let Some(rest) = line.split(" listening on ").nth(1) {
                        let addr = rest.split_whitespace().next().unwrap_or_default();
                        assert!(
                            addr.starts_with("127.0.0.1:"),
                            "unexpected address in {line:?}"
                        );
                        self.addr = addr.to_string();
                        return;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.dump_stderr();
                    panic!("broker did not print its listening line within {STARTUP_DEADLINE:?}");
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.wait_exit(Duration::from_secs(5));
                    self.child = None;
                    self.dump_stderr();
                    panic!("broker exited before listening: {status:?}");
                }
            }
        }
    }

    fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        let deadline = Instant::now() + limit;
        loop {
            if let Some(st) = child.try_wait().expect("try_wait") {
                return Some(st);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM and waits for the process to exit; asserts exit code 0.
    pub fn stop(&mut self) {
        self.stop_with(libc::SIGTERM);
    }

    /// Sends `signal` and waits for the process to exit; asserts exit code 0.
    pub fn stop_with(&mut self, signal: libc::c_int) {
        let pid = self.pid() as libc::pid_t;
        // SAFETY: plain kill(2) on our own child's pid.
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(rc, 0, "kill({signal}) failed");
        let status = self.wait_exit(SHUTDOWN_DEADLINE);
        let Some(status) = status else {
            self.dump_stderr();
            panic!("broker did not exit within {SHUTDOWN_DEADLINE:?} after signal {signal}");
        };
        self.child = None;
        if !status.success() {
            self.dump_stderr();
            panic!("broker exited with {status} after signal {signal}, expected 0");
        }
    }

    /// SIGKILL: no clean shutdown.
    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("broker is not running");
        child.kill().expect("SIGKILL");
        child.wait().expect("wait after SIGKILL");
    }

    /// Starts again on the same data directory (stopping with SIGTERM first
    /// if still running).
    pub fn restart(&mut self) {
        if self.child.is_some() {
            self.stop();
        }
        self.spawn();
    }

    /// Stops with SIGTERM and starts again at once on the same port (as an
    /// operator restarting a broker would; clients keep their bootstrap
    /// address).
    pub fn restart_same_port(&mut self) {
        let port = self
            .addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("current port");
        if self.child.is_some() {
            self.stop();
        }
        self.next_port = port;
        self.spawn();
        self.next_port = 0;
    }

    /// True while the process has not exited.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().expect("try_wait").is_none(),
            None => false,
        }
    }

    /// Everything the broker wrote to stderr in every run so far.
    pub fn stderr_text(&self) -> String {
        let mut out = String::new();
        for run in 1..=self.starts {
            if let Ok(s) = fs::read_to_string(self.stderr_path(run)) {
                out.push_str(&format!("----- broker stderr, run {run} -----\n"));
                out.push_str(&s);
            }
        }
        out
    }

    fn dump_stderr(&self) {
        let text = self.stderr_text();
        // Keep failure output readable: the last 200 lines are enough.
        let lines: Vec<&str> = text.lines().collect();
        let start = lines.len().saturating_sub(200);
        eprintln!("{}", lines[start..].join("\n"));
    }

    /// Path of a partition's first segment file.
    pub fn segment_path(&self, topic: &str, partition: i32) -> PathBuf {
        self.data_dir()
            .join(format!("{topic}-{partition}"))
            .join("00000000000000000000.log")
    }

    /// Builds a client config with the bootstrap address and sane test timeouts.
    pub fn client_config(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", self.bootstrap())
            .set("broker.address.family", "v4")
            .set("socket.timeout.ms", "30000")
            .set("reconnect.backoff.ms", "50")
            .set("reconnect.backoff.max.ms", "500")
            .set("log_level", "4");
        c
    }

    /// A `FutureProducer` with extra settings (e.g. `acks`, `compression.type`).
    pub fn producer(&self, extra: &[(&str, &str)]) -> FutureProducer {
        let mut c = self.client_config();
        c.set("message.timeout.ms", "30000")
            .set("linger.ms", "5")
            .set("enable.idempotence", "false");
        for (k, v) in extra {
            c.set(*k, *v);
        }
        c.create().expect("create producer")
    }

    /// A `BaseConsumer` for manual assignment (no group protocol is used).
    pub fn consumer(&self, extra: &[(&str, &str)]) -> BaseConsumer {
        let mut c = self.client_config();
        c.set("group.id", "fjord-it-unused")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest")
            .set("fetch.wait.max.ms", "100");
        for (k, v) in extra {
            c.set(*k, *v);
        }
        c.create().expect("create consumer")
    }

    /// A consumer assigned to `partitions` of `topic`, each from `offset`.
    pub fn assigned_consumer(
        &self,
        topic: &str,
        partitions: &[i32],
        offset: Offset,
    ) -> BaseConsumer {
        let c = self.consumer(&[]);
        assign(&c, topic, partitions, offset);
        c
    }

    /// An `AdminClient`.
    pub fn admin(&self) -> AdminClient<DefaultClientContext> {
        self.client_config().create().expect("create admin client")
    }

    /// Creates `topic` with `partitions` partitions (replication factor 1)
    /// and waits until metadata shows every partition with a leader.
    pub async fn create_topic(&self, topic: &str, partitions: i32) {
        let admin = self.admin();
        let res = admin
            .create_topics(
                &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
                &admin_opts(),
            )
            .await
            .expect("CreateTopics request");
        assert_eq!(res.len(), 1);
        if let Err((name, code)) = &res[0] {
            panic!("creating topic {name} failed: {code:?}");
        }
        let consumer = self.consumer(&[]);
        wait_for(CLIENT_TIMEOUT, &format!("metadata for {topic}"), || {
            partition_count(&consumer, topic) == Some(partitions as usize)
        });
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if thread::panicking() {
            self.dump_stderr();
        }
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Admin options with finite timeouts.
pub fn admin_opts() -> AdminOptions {
    AdminOptions::new()
        .request_timeout(Some(CLIENT_TIMEOUT))
        .operation_timeout(Some(CLIENT_TIMEOUT))
}

/// Assigns `partitions` of `topic` to `consumer`, each from `offset`.
pub fn assign(consumer: &BaseConsumer, topic: &str, partitions: &[i32], offset: Offset) {
    let mut tpl = TopicPartitionList::new();
    for &p in partitions {
        tpl.add_partition_offset(topic, p, offset)
            .expect("add partition");
    }
    consumer.assign(&tpl).expect("assign");
}

/// Number of partitions metadata reports for `topic` without error, if any.
pub fn partition_count(consumer: &BaseConsumer, topic: &str) -> Option<usize> {
    let md = consumer.fetch_metadata(Some(topic), CLIENT_TIMEOUT).ok()?;
    let t = md.topics().iter().find(|t| t.name() == topic)?;
    if t.error().is_some()
        || t.partitions()
            .iter()
            .any(|p| p.error().is_some() || p.leader() < 0)
    {
        return None;
    }
    Some(t.partitions().len())
}

/// Polls `cond` every 20 ms until it holds; panics with `what` after `limit`.
pub fn wait_for(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `consumer` until `count` messages arrived; panics after `limit`.
/// Errors from the consumer fail the test.
pub fn consume_n(consumer: &BaseConsumer, count: usize, limit: Duration) -> Vec<OwnedMessage> {
    let deadline = Instant::now() + limit;
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "timed out after {limit:?}: consumed {} of {count} messages",
            out.len()
        );
        match consumer.poll(left.min(Duration::from_millis(500))) {
            None => {}
            Some(Ok(m)) => out.push(m.detach()),
            Some(Err(e)) => panic!("consumer error after {} messages: {e}", out.len()),
        }
    }
    out
}

/// Polls for `quiet` and asserts no message arrives.
pub fn assert_no_more(consumer: &BaseConsumer, quiet: Duration) {
    let deadline = Instant::now() + quiet;
    while Instant::now() < deadline {
        if let Some(r) = consumer.poll(Duration::from_millis(100)) {
            match r {
                Ok(m) => panic!(
                    "unexpected extra message {}-{}@{}",
                    m.topic(),
                    m.partition(),
                    m.offset()
                ),
                Err(e) => panic!("consumer error: {e}"),
            }
        }
    }
}

/// Groups messages by partition, offsets in arrival order.
pub fn offsets_by_partition(msgs: &[OwnedMessage]) -> HashMap<i32, Vec<i64>> {
    let mut m: HashMap<i32, Vec<i64>> = HashMap::new();
    for msg in msgs {
        m.entry(msg.partition()).or_default().push(msg.offset());
    }
    m
}

/// Low and high watermark of one partition.
pub fn watermarks(consumer: &BaseConsumer, topic: &str, partition: i32) -> (i64, i64) {
    consumer
        .fetch_watermarks(topic, partition, CLIENT_TIMEOUT)
        .unwrap_or_else(|e| panic!("fetch_watermarks {topic}-{partition}: {e}"))
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}

// ---------------------------------------------------------------------------
// Raw wire helpers (for tests that talk to the broker without a client).
// ---------------------------------------------------------------------------

/// A request body builder: big-endian Kafka primitive types.
#[derive(Default, Clone)]
pub struct Wire {
    pub buf: Vec<u8>,
}

impl Wire {
    pub fn new() -> Wire {
        Wire::default()
    }
    pub fn i8(&mut self, v: i8) -> &mut Self {
        self.buf.push(v as u8);
        self
    }
    pub fn i16(&mut self, v: i16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// Non-flexible string: i16 length + bytes.
    pub fn string(&mut self, s: &str) -> &mut Self {
        self.i16(s.len() as i16);
        self.buf.extend_from_slice(s.as_bytes());
        self
    }
    /// Unsigned varint (flexible versions).
    pub fn uvarint(&mut self, mut v: u64) -> &mut Self {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
        self
    }
    /// Zig-zag signed varint (record fields).
    pub fn varint(&mut self, v: i64) -> &mut Self {
        self.uvarint(((v << 1) ^ (v >> 63)) as u64)
    }
    /// Compact string (flexible versions): uvarint(len + 1) + bytes.
    pub fn compact_string(&mut self, s: &str) -> &mut Self {
        self.uvarint(s.len() as u64 + 1);
        self.buf.extend_from_slice(s.as_bytes());
        self
    }
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }
}

/// Frames a request: i32 size, header v1 (api key, version, correlation id,
/// client id), body.
pub fn frame_v1(api_key: i16, version: i16, correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let mut h = Wire::new();
    h.i16(api_key)
        .i16(version)
        .i32(correlation_id)
        .string("fjord-it");
    h.bytes(body);
    let mut out = Vec::with_capacity(h.buf.len() + 4);
    out.extend_from_slice(&(h.buf.len() as i32).to_be_bytes());
    out.extend_from_slice(&h.buf);
    out
}

/// Frames a request with header v2 (header v1 + empty tagged fields).
pub fn frame_v2(api_key: i16, version: i16, correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let mut b = Wire::new();
    b.uvarint(0).bytes(body);
    frame_v1(api_key, version, correlation_id, &b.buf)
}

/// Opens a TCP connection with read/write timeouts.
pub fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// Reads one response frame (without its size prefix).
pub fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size)?;
    let size = i32::from_be_bytes(size);
    assert!((4..=64 << 20).contains(&size), "bad response size {size}");
    let mut buf = vec![0u8; size as usize];
    s.read_exact(&mut buf)?;
    Ok(buf)
}

/// Sends `frame` and reads one response frame.
pub fn roundtrip(s: &mut TcpStream, frame: &[u8]) -> Vec<u8> {
    s.write_all(frame).expect("write request");
    read_frame(s).expect("read response")
}

/// Asserts the peer closes `s` (EOF or reset) within the read timeout.
pub fn assert_closed(s: &mut TcpStream) {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 1024];
    match s.read(&mut buf) {
        Ok(0) => {}
        Ok(n) => panic!("expected the broker to close the connection, got {n} bytes"),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
            ) => {}
        Err(e) => panic!("expected the broker to close the connection, got {e}"),
    }
}

/// A cursor over response bytes.
pub struct Reader<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }
    fn take(&mut self, n: usize) -> &'a [u8] {
        assert!(
            self.pos + n <= self.buf.len(),
            "response truncated at {} (+{n})",
            self.pos
        );
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        s
    }
    pub fn i8(&mut self) -> i8 {
        self.take(1)[0] as i8
    }
    pub fn i16(&mut self) -> i16 {
        i16::from_be_bytes(self.take(2).try_into().unwrap())
    }
    pub fn i32(&mut self) -> i32 {
        i32::from_be_bytes(self.take(4).try_into().unwrap())
    }
    pub fn i64(&mut self) -> i64 {
        i64::from_be_bytes(self.take(8).try_into().unwrap())
    }
    pub fn string(&mut self) -> Option<String> {
        let n = self.i16();
        if n < 0 {
            return None;
        }
        Some(String::from_utf8(self.take(n as usize).to_vec()).expect("utf8"))
    }
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
}

/// Byte offsets and base offsets of the RecordBatches in a segment file:
/// `(position, base_offset, record_count, total_len)`, stopping at the first
/// incomplete batch.
pub fn segment_batches(path: &Path) -> Vec<(usize, i64, i64, usize)> {
    let data = fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos + 61 <= data.len() {
        let base = i64::from_be_bytes(data[pos..pos + 8].try_into().unwrap());
        let len = i32::from_be_bytes(data[pos + 8..pos + 12].try_into().unwrap()) as usize + 12;
        if pos + len > data.len() {
            break;
        }
        let last_delta = i32::from_be_bytes(data[pos + 23..pos + 27].try_into().unwrap()) as i64;
        out.push((pos, base, last_delta + 1, len));
        pos += len;
    }
    out
}

// ---------------------------------------------------------------------------
// Consumer-group helpers.
// ---------------------------------------------------------------------------

/// Client settings for a consumer that joins `group` (subscribe), with short
/// heartbeats so rebalances are noticed quickly; `extra` wins.
pub fn group_client_config(bootstrap: &str, group: &str, extra: &[(&str, &str)]) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("socket.timeout.ms", "30000")
        .set("reconnect.backoff.ms", "50")
        .set("reconnect.backoff.max.ms", "500")
        .set("log_level", "4")
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "300")
        .set("max.poll.interval.ms", "20000")
        .set("fetch.wait.max.ms", "100");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    c
}

impl Broker {
    /// Settings for a group member of `group` (see [`group_client_config`]).
    pub fn group_config(&self, group: &str, extra: &[(&str, &str)]) -> ClientConfig {
        group_client_config(&self.bootstrap(), group, extra)
    }

    /// A `BaseConsumer` in `group` (not yet subscribed).
    pub fn group_consumer(&self, group: &str, extra: &[(&str, &str)]) -> BaseConsumer {
        self.group_config(group, extra)
            .create()
            .expect("create group consumer")
    }
}

/// Calls `f` every 50 ms until it gives `Ok`; after `limit` panics with `what`
/// and the last `Err` text (the state seen last).
pub fn poll_until<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        match f() {
            Ok(v) => return v,
            Err(last) => {
                assert!(
                    Instant::now() < deadline,
                    "timed out after {limit:?} waiting for {what}; last seen: {last}"
                );
            }
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Sends one request encoded by the `kafka-protocol` crate (header version
/// chosen for `version`) and decodes the response, checking the correlation
/// id and that the whole frame was consumed.
pub fn kp_call<R: kafka_protocol::protocol::Request>(
    s: &mut TcpStream,
    version: i16,
    correlation_id: i32,
    req: &R,
) -> R::Response {
    kp_send(s, version, correlation_id, req);
    kp_recv::<R>(s, version, correlation_id)
}

/// Writes one request encoded by the `kafka-protocol` crate without waiting
/// for the answer (for requests the broker parks, such as JoinGroup).
pub fn kp_send<R: kafka_protocol::protocol::Request>(
    s: &mut TcpStream,
    version: i16,
    correlation_id: i32,
    req: &R,
) {
    let mut frame = Vec::new();
    kp_encode(&mut frame, version, correlation_id, req);
    s.write_all(&frame).expect("write request");
}

/// Appends one request frame encoded by the `kafka-protocol` crate (size
/// field, header for `version`, body) to `out`, for tests that write
/// several requests at once.
pub fn kp_encode<R: kafka_protocol::protocol::Request>(
    out: &mut Vec<u8>,
    version: i16,
    correlation_id: i32,
    req: &R,
) {
    use kafka_protocol::messages::RequestHeader;
    use kafka_protocol::protocol::{Encodable, StrBytes};

    let mut buf = bytes::BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("fjord-it")))
        .encode(&mut buf, R::header_version(version))
        .expect("encode request header");
    req.encode(&mut buf, version).expect("encode request");
    out.extend_from_slice(&(buf.len() as i32).to_be_bytes());
    out.extend_from_slice(&buf);
}

/// Reads and decodes the response to a request sent with [`kp_send`].
pub fn kp_recv<R: kafka_protocol::protocol::Request>(
    s: &mut TcpStream,
    version: i16,
    correlation_id: i32,
) -> R::Response {
    use bytes::Buf;
    use kafka_protocol::messages::ResponseHeader;
    use kafka_protocol::protocol::{Decodable, HeaderVersion};

    let mut resp = bytes::Bytes::from(read_frame(s).expect("read response"));
    let header = ResponseHeader::decode(&mut resp, R::Response::header_version(version))
        .expect("decode response header");
    assert_eq!(header.correlation_id, correlation_id, "correlation id");
    let body = R::Response::decode(&mut resp, version)
        .unwrap_or_else(|e| panic!("decode response to api key {} v{version}: {e}", R::KEY));
    assert_eq!(
        resp.remaining(),
        0,
        "trailing bytes after the response to api key {} v{version}",
        R::KEY
    );
    body
}

/// Sends `(partition, value)` records to `topic` (all enqueued first, then
/// awaited) and waits up to `limit` for each delivery report; gives
/// `(partition, offset, value)` per record. Panics on a failed delivery or
/// a record placed on another partition.
pub async fn send_to_partitions(
    producer: &FutureProducer,
    topic: &str,
    records: &[(i32, String)],
    limit: Duration,
) -> Vec<(i32, i64, String)> {
    let mut futures = Vec::new();
    for (p, v) in records {
        let rec = rdkafka::producer::FutureRecord::<(), _>::to(topic)
            .partition(*p)
            .payload(v);
        futures.push(
            producer
                .send_result(rec)
                .map_err(|(e, _)| e)
                .expect("enqueue record"),
        );
    }
    let mut out = Vec::new();
    for (f, (p, v)) in futures.into_iter().zip(records) {
        let d = tokio::time::timeout(limit, f)
            .await
            .expect("delivery within the deadline")
            .expect("delivery future not cancelled")
            .unwrap_or_else(|(e, _)| panic!("delivery of {v} failed: {e}"));
        assert_eq!(d.partition, *p);
        out.push((d.partition, d.offset, v.clone()));
    }
    out
}

/// One RecordBatch v2 of one uncompressed record: no key, `value`,
/// CreateTime `timestamp` (ms), no producer id (what a plain producer sends
/// in a raw Produce request).
pub fn one_record_batch(value: bytes::Bytes, timestamp: i64) -> bytes::Bytes {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let rec = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp,
        key: None,
        value: Some(value),
        headers: Default::default(),
    };
    let mut buf = bytes::BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, [rec].iter(), &opts).expect("encode batch");
    buf.freeze()
}
