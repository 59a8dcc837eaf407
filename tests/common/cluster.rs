//! A [`Cluster`] of real `fjord` processes on loopback: N combined
//! broker+controller nodes, each with its own data directory and
//! `server.properties` (Kafka's KRaft keys), formatted with one cluster id.
//!
//! The ports are chosen up front (each node's client and controller port,
//! bound once to port 0 to find a free one), so a node restarts on the ports
//! it had and `controller.quorum.voters` never changes. With
//! [`Cluster::start_with_proxies`], every node's controller listener sits
//! behind a [`Proxy`] (the voters list, the same on every node, names the
//! proxies), which knows which node opened each connection, so every
//! direction of every link between nodes can be cut and healed alone
//! ([`Cluster::set_link`], [`Cluster::partition`], [`Cluster::isolate`]).
//!
//! Raft and forwarded requests travel over the controller listener, so a
//! node cut off there stops heartbeating to the active controller and is
//! fenced; client traffic (and the PLAINTEXT listener) is not proxied.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::MetadataResponse;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{MetadataRequest, ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;

use super::proxy::{owner_pid, Fault, Proxy};
use super::{SHUTDOWN_DEADLINE, STARTUP_DEADLINE};

/// Settings every node gets unless the test overrides them: short enough
/// for failover tests, long enough for a loaded test machine, in Kafka's
/// proportions (its defaults: session 9000 ms, heartbeat 2000 ms, election
/// 1000 ms, requests to the controller 2000 ms, shorter than a session).
pub const FAST_SETTINGS: &[(&str, &str)] = &[
    ("broker.session.timeout.ms", "3000"),
    ("broker.heartbeat.interval.ms", "300"),
    ("controller.quorum.election.timeout.ms", "600"),
    ("controller.quorum.request.timeout.ms", "2000"),
];

/// Set (to anything) to keep a failed test's cluster directory: every
/// node's `server.properties`, data and stderr of each run.
pub const KEEP_ENV: &str = "FJORD_IT_KEEP_CLUSTER";

/// How often a node may be respawned when its port was taken in the
/// moment between choosing it and binding it (another test's connection).
const BIND_RETRIES: usize = 5;

/// The proxy source of a connection this test process opened (a client).
const CLIENT_SOURCE: i32 = -1;

/// Where a node's start stands.
#[derive(Debug)]
enum Startup {
    Listening,
    Pending,
    Exited { port_in_use: bool },
}

pub use super::ports::free_port;

/// One node of a [`Cluster`].
struct Node {
    id: i32,
    dir: PathBuf,
    client_port: u16,
    controller_port: u16,
    child: Option<Child>,
    lines: Option<mpsc::Receiver<String>>,
    starts: usize,
    /// A quorum voter (`broker,controller`); false: a broker-only node.
    voter: bool,
    /// The port of its `SECURE` listener (secured clusters).
    secure_port: u16,
}

impl Node {
    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }
    fn props(&self) -> PathBuf {
        self.dir.join("server.properties")
    }
    fn stderr_path(&self, run: usize) -> PathBuf {
        self.dir.join(format!("stderr-{run}.log"))
    }
    fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }
}

/// N `fjord` processes forming one cluster; every process is killed on drop.
pub struct Cluster {
    /// Taken only on drop (to keep it, see [`KEEP_ENV`]).
    root: Option<tempfile::TempDir>,
    cluster_id: String,
    nodes: Vec<Node>,
    overrides: Vec<String>,
    /// Node id → the proxy in front of its controller listener (only with
    /// [`Cluster::start_with_proxies`]).
    inbound: BTreeMap<i32, Proxy>,
    /// Node id → the proxy in front of its client listener, which the node
    /// advertises (only with [`Cluster::start_with_proxies`]): followers'
    /// fetches and clients' requests go through it.
    data_inbound: BTreeMap<i32, Proxy>,
    /// Pid of every running node process → node id (the proxies' sources).
    pids: Arc<Mutex<HashMap<u32, i32>>>,
    /// CPUs this test process may use: node `i` is pinned to one of them in
    /// turn, so the nodes do not all share the first.
    cpus: Vec<usize>,
    /// Shards per node (`--shards`).
    shards: usize,
    /// The security of a secured cluster ([`Cluster::start_secured`]).
    secure: Option<SecureSetup>,
}

/// A secured cluster: every node also has a `SECURE` listener (SASL_SSL),
/// which is the inter-broker listener, and its controller listener is
/// SASL_SSL too; the `PLAINTEXT` listener stays for the test's own checks.
#[derive(Debug, Clone, Default)]
pub struct SecureSetup {
    /// `key=value` lines every node's `server.properties` gets (keystores,
    /// mechanisms, JAAS lines, `super.users`).
    pub props: Vec<String>,
    /// `fjord format --add-scram` values.
    pub add_scram: Vec<String>,
}

impl Cluster {
    /// Starts `n` nodes (ids 1..=n) with `--override key=value` for each of
    /// `overrides` (over [`FAST_SETTINGS`]) and waits until every node
    /// serves and every broker is registered and unfenced.
    pub fn start(n: usize, overrides: &[&str]) -> Cluster {
        Cluster::start_inner(n, overrides, false, 1)
    }

    /// [`Cluster::start`] with `shards` shards per node (unpinned when the
    /// machine has fewer CPUs).
    pub fn start_sharded(n: usize, shards: usize, overrides: &[&str]) -> Cluster {
        Cluster::start_inner(n, overrides, false, shards)
    }

    /// [`Cluster::start`] with a [`Proxy`] in front of every node's
    /// controller listener, faults settable per link.
    pub fn start_with_proxies(n: usize, overrides: &[&str]) -> Cluster {
        Cluster::start_inner(n, overrides, true, 1)
    }

    /// [`Cluster::start`] secured as `setup` says (see [`SecureSetup`]).
    pub fn start_secured(n: usize, setup: SecureSetup) -> Cluster {
        Cluster::start_full(n, &[], false, 1, Some(setup))
    }

    /// `host:port` of node `id`'s `SECURE` listener.
    pub fn secure_bootstrap(&self, id: i32) -> String {
        format!("127.0.0.1:{}", self.nodes[self.idx(id)].secure_port)
    }

    fn start_inner(n: usize, overrides: &[&str], proxied: bool, shards: usize) -> Cluster {
        Cluster::start_full(n, overrides, proxied, shards, None)
    }

    fn start_full(
        n: usize,
        overrides: &[&str],
        proxied: bool,
        shards: usize,
        secure: Option<SecureSetup>,
    ) -> Cluster {
        assert!(n >= 1);
        let root = tempfile::Builder::new()
            .prefix("fjord-cluster-")
            .tempdir()
            .expect("create temp dir");
        let nodes: Vec<Node> = (1..=n as i32)
            .map(|id| {
                let dir = root.path().join(format!("n{id}"));
                fs::create_dir_all(dir.join("data")).expect("create node dir");
                Node {
                    id,
                    dir,
                    client_port: free_port(),
                    controller_port: free_port(),
                    child: None,
                    lines: None,
                    starts: 0,
                    voter: true,
                    secure_port: free_port(),
                }
            })
            .collect();
        let pids: Arc<Mutex<HashMap<u32, i32>>> = Arc::default();
        let mut inbound = BTreeMap::new();
        let mut data_inbound = BTreeMap::new();
        if proxied {
            for to in &nodes {
                let c_pids = pids.clone();
                let pids = pids.clone();
                let classify = Arc::new(move |peer, port| {
                    let known: HashMap<u32, i32> = pids.lock().expect("pids lock").clone();
                    let candidates: Vec<u32> = known.keys().copied().collect();
                    owner_pid(peer, port, &candidates).and_then(|pid| known.get(&pid).copied())
                });
                let target = format!("127.0.0.1:{}", to.controller_port);
                inbound.insert(to.id, Proxy::with_sources(&target, classify));
                // The client listener also serves this test's own clients:
                // their connections are source -1 (never faulted).
                let pids = c_pids.clone();
                let me = std::process::id();
                let data_classify = Arc::new(move |peer, port| {
                    let mut known: HashMap<u32, i32> = pids.lock().expect("pids lock").clone();
                    known.insert(me, CLIENT_SOURCE);
                    let candidates: Vec<u32> = known.keys().copied().collect();
                    owner_pid(peer, port, &candidates).and_then(|pid| known.get(&pid).copied())
                });
                let target = format!("127.0.0.1:{}", to.client_port);
                data_inbound.insert(to.id, Proxy::with_sources(&target, data_classify));
            }
        }
        let out = Command::new(env!("CARGO_BIN_EXE_fjord"))
            .arg("random-uuid")
            .output()
            .expect("run fjord random-uuid");
        assert!(out.status.success(), "fjord random-uuid: {out:?}");
        let cluster_id = String::from_utf8(out.stdout)
            .expect("utf8 cluster id")
            .trim()
            .to_string();
        let mut c = Cluster {
            root: Some(root),
            cluster_id,
            nodes,
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
            inbound,
            data_inbound,
            pids,
            cpus: allowed_cpus(),
            shards,
            secure: secure.clone(),
        };
        for i in 0..c.nodes.len() {
            c.write_properties(i);
            c.format(i);
        }
        let ids = c.ids();
        c.start_nodes(&ids);
        c.wait_brokers(&ids, STARTUP_DEADLINE);
        c
    }

    fn idx(&self, id: i32) -> usize {
        self.nodes
            .iter()
            .position(|n| n.id == id)
            .unwrap_or_else(|| panic!("no node {id} in this cluster"))
    }

    /// The node ids, in order.
    pub fn ids(&self) -> Vec<i32> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    /// The ids of the nodes whose process is running.
    pub fn running(&mut self) -> Vec<i32> {
        let ids = self.ids();
        ids.into_iter().filter(|&id| self.is_running(id)).collect()
    }

    /// The cluster id all nodes were formatted with.
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// The voters list: every node's proxy, or its controller port. The
    /// same on every node (openraft replicates the first leader's
    /// membership, addresses included, to the others).
    fn voters(&self) -> String {
        self.nodes
            .iter()
            .filter(|n| n.voter)
            .map(|n| {
                let port = match self.inbound.get(&n.id) {
                    Some(p) => p.port(),
                    None => n.controller_port,
                };
                format!("{}@127.0.0.1:{port}", n.id)
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Rewrites every node's `server.properties` with a voters list that
    /// names the controller listeners themselves, not their proxies (for
    /// the next start of each node; the proxies keep running).
    pub fn bypass_proxies(&mut self) {
        let proxies = std::mem::take(&mut self.inbound);
        for i in 0..self.nodes.len() {
            self.write_properties(i);
        }
        self.inbound = proxies;
    }

    fn write_properties(&self, i: usize) {
        let n = &self.nodes[i];
        let mut text = if n.voter {
            String::new()
        } else {
            // A broker-only node: no controller listener of its own.
            format!(
                "process.roles=broker\n\
                 node.id={id}\n\
                 controller.quorum.voters={voters}\n\
                 listeners=PLAINTEXT://127.0.0.1:{cp}\n\
                 controller.listener.names=CONTROLLER\n\
                 inter.broker.listener.name=PLAINTEXT\n\
                 listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n\
                 log.dirs={data}\n",
                id = n.id,
                voters = self.voters(),
                cp = n.client_port,
                data = n.data_dir().display(),
            )
        };
        if n.voter {
            text = format!(
                "process.roles=broker,controller\n\
             node.id={id}\n\
             controller.quorum.voters={voters}\n\
             listeners=PLAINTEXT://127.0.0.1:{cp},CONTROLLER://127.0.0.1:{pp}\n\
             controller.listener.names=CONTROLLER\n\
             inter.broker.listener.name=PLAINTEXT\n\
             listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n\
             log.dirs={data}\n",
                id = n.id,
                voters = self.voters(),
                cp = n.client_port,
                pp = n.controller_port,
                data = n.data_dir().display(),
            );
        }
        if let Some(s) = &self.secure {
            text = text
                .replace(
                    &format!(",CONTROLLER://127.0.0.1:{}\n", n.controller_port),
                    &format!(
                        ",CONTROLLER://127.0.0.1:{},SECURE://127.0.0.1:{}\n",
                        n.controller_port, n.secure_port
                    ),
                )
                .replace(
                    "inter.broker.listener.name=PLAINTEXT",
                    "inter.broker.listener.name=SECURE",
                )
                .replace(
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    "listener.security.protocol.map=CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL",
                );
            for p in &s.props {
                text.push_str(p);
                text.push('\n');
            }
        }
        if let Some(p) = self.data_inbound.get(&n.id) {
            text.push_str(&format!(
                "advertised.listeners=PLAINTEXT://127.0.0.1:{}\n",
                p.port()
            ));
        }
        for (k, v) in FAST_SETTINGS {
            text.push_str(&format!("{k}={v}\n"));
        }
        fs::write(n.props(), text).expect("write server.properties");
    }

    /// Adds a broker-only node (`process.roles=broker`, the next id),
    /// formatted for this cluster, starts it and waits until it is a
    /// registered, unfenced broker; gives its id.
    pub fn add_broker(&mut self) -> i32 {
        let id = self.nodes.iter().map(|n| n.id).max().unwrap_or(0) + 1;
        let root = self
            .root
            .as_ref()
            .expect("cluster root")
            .path()
            .to_path_buf();
        let dir = root.join(format!("n{id}"));
        fs::create_dir_all(dir.join("data")).expect("create node dir");
        self.nodes.push(Node {
            id,
            dir,
            client_port: free_port(),
            controller_port: 0,
            child: None,
            lines: None,
            starts: 0,
            voter: false,
            secure_port: free_port(),
        });
        let i = self.nodes.len() - 1;
        self.write_properties(i);
        self.format(i);
        self.start_nodes(&[id]);
        let all = self.ids();
        self.wait_brokers(&all, STARTUP_DEADLINE);
        id
    }

    fn format(&self, i: usize) {
        let n = &self.nodes[i];
        let out = Command::new(env!("CARGO_BIN_EXE_fjord"))
            .arg("format")
            .arg("--config")
            .arg(n.props())
            .arg("--cluster-id")
            .arg(&self.cluster_id)
            .args(
                self.secure
                    .iter()
                    .flat_map(|s| s.add_scram.iter())
                    .flat_map(|v| ["--add-scram", v.as_str()]),
            )
            .output()
            .expect("run fjord format");
        assert!(
            out.status.success(),
            "fjord format of node {}: {}",
            n.id,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The `server.properties` of node `id`.
    pub fn properties_path(&self, id: i32) -> PathBuf {
        self.nodes[self.idx(id)].props()
    }

    /// The data directory (`log.dirs`) of node `id`.
    pub fn data_dir(&self, id: i32) -> PathBuf {
        self.nodes[self.idx(id)].data_dir()
    }

    /// Replaces the `--override` settings of every later start.
    pub fn set_overrides(&mut self, overrides: &[&str]) {
        self.overrides = overrides.iter().map(|s| s.to_string()).collect();
    }

    /// `127.0.0.1:<client port>` of node `id` (whether or not it runs).
    pub fn bootstrap(&self, id: i32) -> String {
        self.nodes[self.idx(id)].bootstrap()
    }

    /// Every node's client address, comma-separated.
    pub fn bootstrap_all(&self) -> String {
        self.nodes
            .iter()
            .map(Node::bootstrap)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `127.0.0.1:<controller port>` of node `id` (its own listener, not a
    /// proxy).
    pub fn controller_addr(&self, id: i32) -> String {
        format!("127.0.0.1:{}", self.nodes[self.idx(id)].controller_port)
    }

    /// Process id of node `id`'s current run.
    pub fn pid(&self, id: i32) -> u32 {
        self.nodes[self.idx(id)]
            .child
            .as_ref()
            .unwrap_or_else(|| panic!("node {id} is not running"))
            .id()
    }

    /// True while node `id`'s process has not exited.
    pub fn is_running(&mut self, id: i32) -> bool {
        let i = self.idx(id);
        match self.nodes[i].child.as_mut() {
            Some(c) => c.try_wait().expect("try_wait").is_none(),
            None => false,
        }
    }

    fn spawn(&mut self, i: usize) {
        let cpu = if self.cpus.is_empty() || self.shards > 1 {
            None
        } else {
            Some(self.cpus[i % self.cpus.len()])
        };
        let overrides = self.overrides.clone();
        let n = &mut self.nodes[i];
        assert!(n.child.is_none(), "node {} already running", n.id);
        n.starts += 1;
        let stderr = fs::File::create(n.stderr_path(n.starts)).expect("create stderr file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fjord"));
        cmd.arg("serve")
            .arg("--config")
            .arg(n.props())
            .arg("--shards")
            .arg(self.shards.to_string());
        for o in &overrides {
            cmd.arg("--override").arg(o);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr));
        if let Some(cpu) = cpu {
            use std::os::unix::process::CommandExt;
            // SAFETY: only sched_setaffinity(2), async-signal-safe, runs
            // between fork and exec; its failure is ignored (the node then
            // runs wherever the test runs).
            unsafe {
                cmd.pre_exec(move || {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu, &mut set);
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().expect("spawn fjord");
        let stdout = child.stdout.take().expect("child stdout");
        let (tx, rx) = mpsc::channel::<String>();
        // Reads stdout for the whole life of the process so it never blocks
        // on a full pipe.
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    // Nobody listens any more; keep draining.
                    continue;
                }
            }
        });
        self.pids
            .lock()
            .expect("pids lock")
            .insert(child.id(), n.id);
        n.child = Some(child);
        n.lines = Some(rx);
    }

    /// Looks (for up to `wait`) for the `listening on` line of node index
    /// `i`'s current run.
    fn poll_listening(&mut self, i: usize, wait: Duration) -> Startup {
        let n = &mut self.nodes[i];
        let rx = n.lines.as_ref().expect("node spawned");
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.split(" listening on ").nth(1) {
                        let addr = rest.split_whitespace().next().unwrap_or_default();
                        assert_eq!(
                            addr,
                            n.bootstrap(),
                            "node {} listens elsewhere: {line:?}",
                            n.id
                        );
                        return Startup::Listening;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => return Startup::Pending,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = wait_exit(n.child.as_mut(), Duration::from_secs(5));
                    if let Some(c) = n.child.take() {
                        self.pids.lock().expect("pids lock").remove(&c.id());
                    }
                    let err = fs::read_to_string(n.stderr_path(n.starts)).unwrap_or_default();
                    eprintln!("node {} exited before listening: {status:?}", n.id);
                    return Startup::Exited {
                        port_in_use: err.contains("Address already in use"),
                    };
                }
            }
        }
    }

    /// Starts the stopped nodes `ids` together (a quorum may need several
    /// of them) and waits until each prints its `listening on` line.
    pub fn start_nodes(&mut self, ids: &[i32]) {
        let mut pending: Vec<(usize, usize)> = ids.iter().map(|&id| (self.idx(id), 0)).collect();
        for &(i, _) in &pending {
            self.spawn(i);
        }
        let deadline = Instant::now() + STARTUP_DEADLINE;
        while !pending.is_empty() {
            let mut still = Vec::new();
            for (i, tries) in pending {
                match self.poll_listening(i, Duration::from_millis(20)) {
                    Startup::Listening => {}
                    Startup::Pending if Instant::now() < deadline => still.push((i, tries)),
                    Startup::Exited { port_in_use: true } if tries < BIND_RETRIES => {
                        // A port chosen up front is taken for a moment:
                        // by another test's connection, or by the listener
                        // of this node's previous run (a killed process's
                        // io_uring lets go of its sockets a little after
                        // the process is gone). Try again.
                        thread::sleep(Duration::from_millis(200));
                        self.spawn(i);
                        still.push((i, tries + 1));
                    }
                    other => {
                        let id = self.nodes[i].id;
                        self.dump_stderr(id);
                        panic!("node {id} did not start serving within {STARTUP_DEADLINE:?}: {other:?}");
                    }
                }
            }
            pending = still;
        }
    }

    /// Waits (up to 10 s) until nothing holds node index `i`'s ports any
    /// more (a killed process's io_uring may keep its listeners a moment).
    fn wait_ports_released(&self, i: usize) {
        let n = &self.nodes[i];
        let free = |port: u16| {
            let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                .and_then(|s| {
                    s.set_reuse_address(true)?;
                    s.bind(&addr.into())
                })
                .is_ok()
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !(free(n.client_port) && free(n.controller_port)) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Starts stopped node `id` and waits for its `listening on` line.
    pub fn start_node(&mut self, id: i32) {
        self.start_nodes(&[id]);
    }

    /// SIGKILL: no clean shutdown.
    pub fn kill9(&mut self, id: i32) {
        let i = self.idx(id);
        let mut child = self.nodes[i]
            .child
            .take()
            .unwrap_or_else(|| panic!("node {id} is not running"));
        child.kill().expect("SIGKILL");
        child.wait().expect("wait after SIGKILL");
        self.pids.lock().expect("pids lock").remove(&child.id());
        self.wait_ports_released(i);
    }

    /// Sends SIGTERM and waits for the process to exit; asserts exit code 0.
    pub fn stop(&mut self, id: i32) {
        self.stop_many(&[id]);
    }

    /// SIGTERM to every node of `ids` at once, then waits for each; asserts
    /// exit code 0.
    pub fn stop_many(&mut self, ids: &[i32]) {
        for &id in ids {
            let pid = self.pid(id) as libc::pid_t;
            // SAFETY: plain kill(2) on our own child's pid.
            let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
            assert_eq!(rc, 0, "kill(SIGTERM) of node {id} failed");
        }
        for &id in ids {
            let i = self.idx(id);
            let status = wait_exit(self.nodes[i].child.as_mut(), SHUTDOWN_DEADLINE);
            let Some(status) = status else {
                self.dump_stderr(id);
                panic!("node {id} did not exit within {SHUTDOWN_DEADLINE:?} after SIGTERM");
            };
            if let Some(c) = self.nodes[i].child.take() {
                self.pids.lock().expect("pids lock").remove(&c.id());
            }
            self.wait_ports_released(i);
            if !status.success() {
                self.dump_stderr(id);
                panic!("node {id} exited with {status} after SIGTERM, expected 0");
            }
        }
    }

    /// Stops node `id` with SIGTERM (if it runs) and starts it again on the
    /// same data directory and ports.
    pub fn restart(&mut self, id: i32) {
        if self.is_running(id) {
            self.stop(id);
        }
        self.start_node(id);
    }

    /// Stops every running node (SIGTERM, all at once) and starts them all
    /// again together.
    pub fn restart_all(&mut self) {
        let running = self.running();
        self.stop_many(&running);
        let ids = self.ids();
        self.start_nodes(&ids);
    }

    // -- metadata ------------------------------------------------------------

    /// A Metadata request (v12, every topic, or `topics`) to node `id`.
    pub fn metadata_from(
        &self,
        id: i32,
        topics: Option<&[&str]>,
    ) -> Result<MetadataResponse, String> {
        let req = MetadataRequest::default()
            .with_allow_auto_topic_creation(false)
            .with_topics(topics.map(|ts| {
                ts.iter()
                    .map(|t| {
                        MetadataRequestTopic::default()
                            .with_name(Some(TopicName(StrBytes::from_string(t.to_string()))))
                    })
                    .collect()
            }));
        let mut s =
            TcpStream::connect(self.bootstrap(id)).map_err(|e| format!("node {id}: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        s.set_write_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        try_kp_call(&mut s, 12, 1, &req).map_err(|e| format!("node {id}: {e}"))
    }

    /// ListOffsets v7 (latest) of `topic`-`partition` to node `id`; gives
    /// the partition's error code: 0 once its leader serves it (a broker
    /// answers NOT_LEADER_OR_FOLLOWER while it still opens the partition's
    /// log, as Kafka does for a replica it does not host yet).
    pub fn list_offsets_code(&self, id: i32, topic: &str, partition: i32) -> Result<i16, String> {
        use kafka_protocol::messages::list_offsets_request::{
            ListOffsetsPartition, ListOffsetsTopic,
        };
        use kafka_protocol::messages::{BrokerId, ListOffsetsRequest};
        let req = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(partition)
                    .with_current_leader_epoch(-1)
                    .with_timestamp(-1)])]);
        let mut s =
            TcpStream::connect(self.bootstrap(id)).map_err(|e| format!("node {id}: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        let resp = try_kp_call(&mut s, 7, 2, &req).map_err(|e| format!("node {id}: {e}"))?;
        resp.topics
            .first()
            .and_then(|t| t.partitions.first())
            .map(|p| p.error_code)
            .ok_or_else(|| format!("node {id}: no partition in the ListOffsets answer"))
    }

    /// An acks=all Produce of one record to `topic`-0 on node `id` (raw
    /// Produce v7, 5 s timeout); gives the partition's error code.
    pub fn produce_raw(&self, id: i32, topic: &str, value: impl Into<bytes::Bytes>) -> i16 {
        let batch = super::one_record_batch(value.into(), super::now_ms());
        let req = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(batch))])]);
        let mut s = TcpStream::connect(self.bootstrap(id)).expect("connect to the node");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("set a read timeout");
        let resp: ProduceResponse = try_kp_call(&mut s, 9, 7, &req).expect("a Produce answer");
        resp.responses[0].partition_responses[0].error_code
    }

    /// Node `id`'s view: `(controller_id, alive broker ids)`.
    pub fn view(&self, id: i32) -> Result<(i32, BTreeSet<i32>), String> {
        let md = self.metadata_from(id, Some(&[]))?;
        Ok((
            md.controller_id.0,
            md.brokers.iter().map(|b| b.node_id.0).collect(),
        ))
    }

    /// The active controller, once every running node reports the same one
    /// (a node id, not -1); panics after `limit`.
    pub fn controller(&mut self, limit: Duration) -> i32 {
        let running = self.running();
        self.controller_on(&running, &[], limit)
    }

    /// The active controller once every node of `asked` reports the same
    /// one, a node id not in `not` (a controller just killed or cut off is
    /// still named until the others notice); panics after `limit`.
    pub fn controller_on(&self, asked: &[i32], not: &[i32], limit: Duration) -> i32 {
        let what = format!("one active controller (not {not:?}) seen by nodes {asked:?}");
        super::poll_until(limit, &what, || {
            let mut seen = BTreeSet::new();
            for &id in asked {
                seen.insert(self.view(id)?.0);
            }
            match seen.iter().collect::<Vec<_>>()[..] {
                [&c] if c >= 0 && !not.contains(&c) => Ok(c),
                _ => Err(format!("controllers seen: {seen:?}")),
            }
        })
    }

    /// Waits until every running node lists exactly `brokers` as alive.
    pub fn wait_brokers(&mut self, brokers: &[i32], limit: Duration) {
        let running = self.running();
        self.wait_brokers_on(&running, brokers, limit);
    }

    /// Waits until each node of `asked` lists exactly `brokers` as alive
    /// (a node cut off from the others keeps its stale view: leave it out).
    pub fn wait_brokers_on(&self, asked: &[i32], brokers: &[i32], limit: Duration) {
        let want: BTreeSet<i32> = brokers.iter().copied().collect();
        let what = format!("nodes {asked:?} to list brokers {want:?}");
        super::poll_until(limit, &what, || {
            for &id in asked {
                let (_, alive) = self.view(id)?;
                if alive != want {
                    return Err(format!("node {id} lists {alive:?}"));
                }
            }
            Ok(())
        })
    }

    // -- faults --------------------------------------------------------------

    /// The proxy in front of node `id`'s controller listener.
    pub fn proxy(&self, id: i32) -> &Proxy {
        self.inbound
            .get(&id)
            .unwrap_or_else(|| panic!("no proxy for node {id} (start_with_proxies?)"))
    }

    /// Sets the fault of the connections node `from` opens to node `to`'s
    /// controller listener (its requests and their answers).
    pub fn set_link(&self, from: i32, to: i32, fault: Fault) {
        assert_ne!(from, to, "a node does not connect to itself");
        self.proxy(to).set_fault_from(from, fault);
    }

    /// Sets the fault of the connections node `from` opens to node `to`'s
    /// client listener (a follower's fetches from its leader).
    pub fn set_data_link(&self, from: i32, to: i32, fault: Fault) {
        assert_ne!(from, to, "a node does not connect to itself");
        self.data_inbound
            .get(&to)
            .unwrap_or_else(|| panic!("no client proxy for node {to} (start_with_proxies?)"))
            .set_fault_from(from, fault);
    }

    /// Black-holes both directions between `a` and `b`.
    pub fn partition(&self, a: i32, b: i32) {
        self.set_link(a, b, Fault::BlackHole);
        self.set_link(b, a, Fault::BlackHole);
    }

    /// Heals both directions between `a` and `b`.
    pub fn heal(&self, a: i32, b: i32) {
        self.set_link(a, b, Fault::Pass);
        self.set_link(b, a, Fault::Pass);
    }

    /// Black-holes every link to and from node `id`.
    pub fn isolate(&self, id: i32) {
        for other in self.ids() {
            if other != id {
                self.partition(id, other);
            }
        }
    }

    /// Heals every link.
    pub fn heal_all(&self) {
        for p in self.inbound.values().chain(self.data_inbound.values()) {
            p.heal();
        }
    }

    // -- clients -------------------------------------------------------------

    /// A client config for `bootstrap` with the test timeouts of
    /// [`super::Broker::client_config`].
    pub fn client_config(&self, bootstrap: &str) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", bootstrap)
            .set("broker.address.family", "v4")
            .set("socket.timeout.ms", "30000")
            .set("reconnect.backoff.ms", "50")
            .set("reconnect.backoff.max.ms", "500")
            .set("topic.metadata.refresh.interval.ms", "1000")
            .set("log_level", "4");
        c
    }

    // -- logs ----------------------------------------------------------------

    /// Everything node `id` wrote to stderr in every run so far.
    pub fn stderr_text(&self, id: i32) -> String {
        let n = &self.nodes[self.idx(id)];
        let mut out = String::new();
        for run in 1..=n.starts {
            if let Ok(s) = fs::read_to_string(n.stderr_path(run)) {
                out.push_str(&format!("----- node {} stderr, run {run} -----\n", n.id));
                out.push_str(&s);
            }
        }
        out
    }

    /// `host:port` of node `id`'s metrics endpoint in its latest run
    /// (started with `metrics.listener`); panics when none was logged.
    pub fn metrics_address(&self, id: i32) -> String {
        let text = self.stderr_text(id);
        let line = text
            .lines()
            .rfind(|l| l.contains("metrics endpoint on http://"))
            .unwrap_or_else(|| panic!("node {id} logged no metrics address"));
        let rest = line.split("http://").nth(1).expect("address");
        rest.trim_end_matches("/metrics").trim().to_string()
    }

    /// Prints the last 150 lines node `id` wrote to stderr (without the
    /// reactor-stall reports).
    pub fn dump_stderr(&self, id: i32) {
        let text = self.stderr_text(id);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.contains("reactor stalled"))
            .collect();
        let start = lines.len().saturating_sub(150);
        eprintln!("{}", lines[start..].join("\n"));
    }

    /// The cluster's root directory (one `nN/` per node).
    pub fn root(&self) -> &Path {
        self.root.as_ref().expect("cluster root").path()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if thread::panicking() {
            for id in self.ids() {
                self.dump_stderr(id);
            }
        }
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if thread::panicking() && std::env::var_os(KEEP_ENV).is_some() {
            if let Some(root) = self.root.take() {
                eprintln!("cluster files kept in {}", root.keep().display());
            }
        }
    }
}

fn wait_exit(child: Option<&mut Child>, limit: Duration) -> Option<ExitStatus> {
    let child = child?;
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

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity(2) fills the set we own.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// [`super::kp_call`] that gives I/O and decoding errors back instead of
/// panicking (for polling nodes that may be down).
pub fn try_kp_call<R: kafka_protocol::protocol::Request>(
    s: &mut TcpStream,
    version: i16,
    correlation_id: i32,
    req: &R,
) -> Result<R::Response, String> {
    use bytes::Buf;
    use kafka_protocol::messages::{RequestHeader, ResponseHeader};
    use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};
    use std::io::Read;

    let mut buf = bytes::BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("fjord-it")))
        .encode(&mut buf, R::header_version(version))
        .map_err(|e| format!("encode header: {e}"))?;
    req.encode(&mut buf, version)
        .map_err(|e| format!("encode request: {e}"))?;
    let mut frame = (buf.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&buf);
    s.write_all(&frame).map_err(|e| format!("write: {e}"))?;
    let mut size = [0u8; 4];
    s.read_exact(&mut size).map_err(|e| format!("read: {e}"))?;
    let size = i32::from_be_bytes(size);
    if !(4..=64 << 20).contains(&size) {
        return Err(format!("bad response size {size}"));
    }
    let mut body = vec![0u8; size as usize];
    s.read_exact(&mut body).map_err(|e| format!("read: {e}"))?;
    let mut resp = bytes::Bytes::from(body);
    let header = ResponseHeader::decode(&mut resp, R::Response::header_version(version))
        .map_err(|e| format!("decode header: {e}"))?;
    if header.correlation_id != correlation_id {
        return Err(format!("correlation id {}", header.correlation_id));
    }
    let out = R::Response::decode(&mut resp, version).map_err(|e| format!("decode: {e}"))?;
    if resp.remaining() != 0 {
        return Err(format!("{} trailing bytes", resp.remaining()));
    }
    Ok(out)
}
