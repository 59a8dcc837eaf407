//! Explicit boot: config → data dir → metadata → executors (one pinned shard
//! per core) → channel mesh → recovery → listeners → signals → orderly
//! shutdown. Boot errors are typed and say how to fix them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use glommio::channels::channel_mesh::MeshBuilder;
use glommio::net::TcpListener;
use glommio::{LocalExecutorBuilder, Placement};

use crate::cluster::controller::{load_or_create_meta, MetaPropertiesError};
use crate::cluster::metadata::{Endpoint, MetadataImage};
use crate::cluster::quorum::{Quorum, QuorumSettings};
use crate::config::Config;
use crate::shard::stall::{self, ShardStallStats};
use crate::shard::{Shard, Task};

mod listener;
mod signals;
mod stats;

use listener::bind_listener;
use signals::{block_signals, wait_for_signal};
use stats::{print_stall_summary, sync_write_stats, METRICS_SYNC};

/// How a listener address is set, for a bind error's hint.
const LISTENERS_HINT: &str = "listeners=PLAINTEXT://host:port";

/// Why the broker could not start.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    /// The data directory could not be created or read.
    #[error("data directory {path}: {source} (check log.dirs and its permissions)")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The settings contradict each other ([`Config::validate`]).
    #[error("configuration error: {0}")]
    Config(#[from] crate::config::ConfigError),
    /// `meta.properties` names another node or another cluster, or cannot
    /// be written.
    #[error(transparent)]
    MetaProperties(#[from] MetaPropertiesError),
    /// Another broker process holds the data directory's lock.
    #[error("data directory {path} is in use by another broker (lock file {path}/.lock); stop it or use another log.dirs")]
    DataDirLocked {
        /// The directory.
        path: PathBuf,
    },
    /// The listener address could not be bound.
    #[error("cannot listen on {addr}: {source} (is another process on that port? set {setting})")]
    Bind {
        /// Address.
        addr: SocketAddr,
        /// The setting that names the address, as to write it.
        setting: &'static str,
        /// Cause.
        source: std::io::Error,
    },
    /// The security settings cannot be used (a bad value, an unreadable
    /// key or certificate file, a malformed JAAS line): the message names
    /// the key and the file.
    #[error("security configuration: {0}")]
    Security(#[from] crate::security::SecurityError),
    /// A shard stopped the broker because going on would lose data (a
    /// partition directory the metadata did not explain deleting; see
    /// `shard::fatal`). The shutdown itself was orderly.
    #[error("stopped: {reason}")]
    Stopped {
        /// What the shard found.
        reason: String,
    },
    /// An executor could not start (io_uring unavailable, memlock too low…).
    #[error("cannot start shard {shard}: {reason}")]
    Executor {
        /// Shard index.
        shard: usize,
        /// Cause.
        reason: String,
    },
}

/// Bytes of io_uring-registered memory per shard. glommio's default is
/// 10 MiB; we do not use its DMA buffers, and a small value keeps unprivileged
/// runs under the default `ulimit -l` of 8 MiB.
const IO_MEMORY: usize = 1 << 20;

/// Takes an exclusive flock on `<dir>/.lock`; errors when another process
/// holds it. The lock lasts as long as the returned file is open.
pub fn lock_data_dir(dir: &std::path::Path) -> Result<std::fs::File, BootError> {
    use std::os::fd::AsRawFd;
    let path = dir.join(".lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| BootError::DataDir {
            path: dir.to_path_buf(),
            source,
        })?;
    // SAFETY: flock on an fd we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(BootError::DataDirLocked {
            path: dir.to_path_buf(),
        });
    }
    // Apache Kafka locks the same `.lock` file with FileChannel.tryLock, an
    // fcntl (POSIX record) lock, which flock does not see: take that kind
    // too, so neither broker opens a directory the other one is using.
    // SAFETY: fcntl(F_SETLK) with a zeroed flock struct we own; l_len 0 is
    // the whole file.
    let locked = unsafe {
        let mut fl: libc::flock = std::mem::zeroed();
        fl.l_type = libc::F_WRLCK as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        libc::fcntl(f.as_raw_fd(), libc::F_SETLK, &fl) == 0
    };
    if !locked {
        return Err(BootError::DataDirLocked {
            path: dir.to_path_buf(),
        });
    }
    Ok(f)
}

/// Raises the soft open-files limit to the hard limit: every partition keeps
/// three files open (`.log`, `.index`, `.timeindex`).
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit on a local struct.
    unsafe {
        let mut l: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

fn reserve_port(addr: SocketAddr) -> Result<(socket2::Socket, SocketAddr), BootError> {
    let domain = if addr.is_ipv4() {
        socket2::Domain::IPV4
    } else {
        socket2::Domain::IPV6
    };
    // SO_REUSEPORT would let a second broker share a port already in use:
    // check with a bind without it first (Kafka reports "address in use"
    // too). SO_REUSEADDR, as Kafka's acceptor sets it, lets a restarted
    // broker take its port back while connections of the previous run are
    // still in TIME_WAIT; it does not allow binding over a listener.
    if addr.port() != 0 {
        let check = || -> std::io::Result<()> {
            let s = socket2::Socket::new(domain, socket2::Type::STREAM, None)?;
            s.set_reuse_address(true)?;
            s.bind(&addr.into())
        };
        check().map_err(|source| BootError::Bind {
            addr,
            setting: LISTENERS_HINT,
            source,
        })?;
    }
    let bind = |addr: SocketAddr| -> std::io::Result<(socket2::Socket, SocketAddr)> {
        let s = socket2::Socket::new(domain, socket2::Type::STREAM, None)?;
        s.set_reuse_address(true)?;
        s.set_reuse_port(true)?;
        s.bind(&addr.into())?;
        let local = s
            .local_addr()?
            .as_socket()
            .ok_or_else(|| std::io::Error::other("bound address is not an IP socket"))?;
        Ok((s, local))
    };
    bind(addr).map_err(|source| BootError::Bind {
        addr,
        setting: LISTENERS_HINT,
        source,
    })
}

/// Starts the broker and blocks until it shuts down (SIGTERM, SIGINT or SIGHUP).
/// Prints `listening on <addr>` on stdout once every shard accepts. Settings
/// that contradict each other ([`Config::validate`]) give
/// [`BootError::Config`] before anything is touched on disk; clients are
/// served on [`Config::client_listener`].
/// Runs a broker until SIGTERM, SIGINT or SIGHUP, then shuts it down in
/// order ([`Node::stop`]). Errors with why it could not start, or with the
/// reason a shard stopped it ([`BootError::Stopped`]).
pub fn run(config: Config) -> Result<(), BootError> {
    // Blocked before any thread starts, so every thread inherits the mask
    // and only this one takes them (`wait_for_signal`).
    let signals = block_signals();
    let node = start_node(config, signals.is_some())?;
    match signals {
        Some(set) => {
            wait_for_signal(&set);
            log::info!("shutting down");
            node.stop()
        }
        None => {
            node.join();
            Ok(())
        }
    }
}

/// A started broker: its shards, their shared flags and the handles to
/// stop it or run work on its shards.
pub struct Node {
    handles: Vec<glommio::ExecutorJoinHandle<()>>,
    flags: Arc<NodeFlags>,
    config: Arc<Config>,
    stalls: Arc<[ShardStallStats]>,
    drivers: Vec<futures_channel::mpsc::UnboundedSender<Task>>,
    bound: SocketAddr,
    _lock: std::fs::File,
}

/// What a node's shards share: set by one thread, read by the others.
#[derive(Debug)]
pub(crate) struct NodeFlags {
    /// Set when the node shuts down; each shard notices within a tick.
    shutdown: std::sync::atomic::AtomicBool,
    /// Set once shard 0 has the metadata image it serves with; the other
    /// shards accept clients only then.
    metadata_ready: std::sync::atomic::AtomicBool,
    /// This broker's epoch when shard 0 stopped its quorum member (-1:
    /// never registered), written into the clean-shutdown marker.
    last_broker_epoch: std::sync::atomic::AtomicI64,
    /// A shard that must stop the broker (`shard::fatal`) signals the
    /// process, whose main thread waits for signals ([`run`]); otherwise it
    /// sets [`NodeFlags::shutdown`] itself.
    by_signal: bool,
}

/// Starts a broker (config → data dir → metadata → executors → mesh →
/// recovery → listeners) and gives it once every shard serves. Signals are
/// the caller's: [`run`] waits for them; an in-process caller stops the
/// node with [`Node::stop`]. Errors with why it could not start.
pub fn start(config: Config) -> Result<Node, BootError> {
    start_node(config, false)
}

/// [`start`]; `by_signal`: the caller waits for SIGTERM (see
/// [`NodeFlags::by_signal`]).
fn start_node(config: Config, by_signal: bool) -> Result<Node, BootError> {
    config.validate()?;
    for k in &config.unknown_keys {
        log::warn!("ignoring unknown config key {k}");
    }
    let data_dir = config.data_dir();
    if config.log_dirs.len() > 1 {
        log::warn!("only the first of log.dirs is used: {}", data_dir.display());
    }
    let dd = |source| BootError::DataDir {
        path: data_dir.clone(),
        source,
    };
    std::fs::create_dir_all(&data_dir).map_err(dd)?;
    // Like Kafka's `.lock`: one broker per data directory. Held (open, flocked)
    // for the life of the process.
    let lock = lock_data_dir(&data_dir)?;
    raise_fd_limit();
    // Every listener's security, files read and checked now.
    let security = Arc::new(crate::security::Security::from_config(&config)?);
    let cluster_id = load_or_create_meta(&data_dir, config.node_id, config.cluster_id.as_deref())?;

    // The client listeners (all but controller.listener.names;
    // `Config::validate` made sure there is one). Each port is resolved
    // once (port 0 in tests) and kept reserved until every shard listens
    // on it with SO_REUSEPORT.
    let mut reservations = Vec::new();
    let mut served: Vec<(SocketAddr, Arc<crate::security::ListenerSecurity>)> = Vec::new();
    let mut endpoints = Vec::new();
    for l in config
        .listeners
        .iter()
        .filter(|l| !config.kraft.is_controller_listener(&l.name))
    {
        let (reservation, bound) = reserve_port(l.addr)?;
        reservations.push(reservation);
        let (host, port) = config
            .advertised_listeners
            .iter()
            .find(|a| a.name == l.name)
            .map(|a| (a.host.clone(), a.port))
            .unwrap_or_else(|| {
                let host = if bound.ip().is_unspecified() {
                    "127.0.0.1".to_string()
                } else {
                    bound.ip().to_string()
                };
                (host, bound.port())
            });
        let endpoint = Endpoint {
            listener: l.name.clone(),
            host,
            port,
        };
        // The inter-broker listener first: other brokers connect to a
        // registration's first endpoint.
        if l.name == security.inter_broker.listener {
            endpoints.insert(0, endpoint);
        } else {
            endpoints.push(endpoint);
        }
        let Some(ls) = security.listener(&l.name) else {
            continue;
        };
        served.push((bound, ls.clone()));
    }
    let bound =
        served
            .first()
            .map(|(a, _)| *a)
            .ok_or_else(|| crate::config::ConfigError::Invalid {
                key: "listeners".to_string(),
                value: String::new(),
                allowed: "a listener not named in controller.listener.names".to_string(),
            })?;
    let served = Arc::new(served);
    // process.roles=broker: this node observes the quorum (Config::validate
    // made sure the voters are given and it is not one of them).
    let voter = config.kraft.process_roles.is_none_or(|r| r.controller);
    let voters: Vec<(i32, String)> = if config.kraft.voters.is_empty() {
        // No voters configured: this node is the quorum's only voter (the
        // single-node broker, or a Kafka 4 file with one bootstrap server).
        vec![(config.node_id, String::new())]
    } else {
        config
            .kraft
            .voters
            .iter()
            .map(|v| (v.id, format!("{}:{}", v.host, v.port)))
            .collect()
    };
    let quorum = QuorumSettings {
        node_id: config.node_id,
        cluster_id: cluster_id.clone(),
        data_dir: data_dir.clone(),
        voters,
        election_timeout: Duration::from_millis(config.cluster.election_timeout_ms),
        session_timeout: Duration::from_millis(config.cluster.broker_session_timeout_ms),
        heartbeat_interval: Duration::from_millis(config.cluster.broker_heartbeat_interval_ms),
        request_timeout: Duration::from_millis(config.cluster.request_timeout_ms),
        endpoints,
        rack: config.cluster.rack.clone(),
        voter,
        leader_rebalance_every: config
            .cluster
            .auto_leader_rebalance_enable
            .then(|| Duration::from_secs(config.cluster.leader_imbalance_check_interval_s.max(1))),
        election: election_rules(&config),
        previous_broker_epoch: crate::cluster::controller::take_clean_shutdown(&data_dir),
        controller_client: security.controller.clone().unwrap_or_else(|| {
            crate::security::ClientSecurity::plaintext(
                config
                    .kraft
                    .controller_listener_names
                    .first()
                    .map_or("CONTROLLER", String::as_str),
            )
        }),
        controller_listener: config
            .controller_listener()
            .and_then(|l| security.listener(&l.name).cloned()),
        super_users: security.super_users.clone(),
        bootstrap_scram: crate::cluster::bootstrap_scram::read(&data_dir).map_err(|source| {
            BootError::DataDir {
                path: data_dir
                    .join(crate::cluster::controller::METADATA_DIR)
                    .join(crate::cluster::bootstrap_scram::FILE),
                source,
            }
        })?,
    };
    // The controller listener (other voters' Raft RPCs and forwarded
    // requests) is served by shard 0, where the quorum member lives.
    let controller_addr = if voter {
        config.controller_listener().map(|l| l.addr)
    } else {
        None
    };
    let image = Arc::new(MetadataImage::empty(cluster_id));
    let flags = Arc::new(NodeFlags {
        shutdown: Default::default(),
        metadata_ready: Default::default(),
        last_broker_epoch: std::sync::atomic::AtomicI64::new(-1),
        by_signal,
    });
    let boot = Arc::new(QuorumBoot {
        settings: quorum,
        controller_addr,
        flags: flags.clone(),
        security: security.clone(),
    });

    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let shards = config.shards.unwrap_or(cores.len().max(1)).max(1);
    if !cores.is_empty() && shards > cores.len() {
        // A shard is one pinned core; more shards than CPUs share cores
        // unpinned. A few (tests on small machines) are tolerated.
        if shards > 4 * cores.len() {
            return Err(BootError::Executor {
                shard: shards - 1,
                reason: format!(
                    "--shards {shards} is far more than the {} CPUs this process may use; a shard is one pinned core",
                    cores.len()
                ),
            });
        }
        log::warn!("--shards {shards} is more than the {} CPUs this process may use: shards will share cores, unpinned", cores.len());
    }
    let stalls = stall::registry(shards);
    if let Some(addr) = config.metrics_listener {
        let at = crate::metrics::serve(addr, stalls.clone()).map_err(|source| BootError::Bind {
            addr,
            setting: "metrics.listener=host:port",
            source,
        })?;
        log::info!("metrics endpoint on http://{at}/metrics");
        println!("fjord metrics at http://{at}/metrics");
    }
    let config = Arc::new(config);
    let mesh: MeshBuilder<Task, _> = MeshBuilder::full(shards, 1024);
    let (ready_tx, ready_rx) = mpsc::channel::<Result<usize, String>>();

    let mut handles = Vec::new();
    let mut drivers = Vec::new();
    for i in 0..shards {
        let placement = match cores.get(i % cores.len().max(1)) {
            Some(c) if shards <= cores.len() => Placement::Fixed(c.id),
            _ => Placement::Unbound,
        };
        let boot = boot.clone();
        let (driver, driven) = futures_channel::mpsc::unbounded::<Task>();
        drivers.push(driver);
        let served = served.clone();
        let (config, image, mesh, ready, stalls) = (
            config.clone(),
            image.clone(),
            mesh.clone(),
            ready_tx.clone(),
            stalls.clone(),
        );
        let builder = LocalExecutorBuilder::new(placement)
            .name(&format!("fjord-shard-{i}"))
            .io_memory(IO_MEMORY);
        let h = builder
            .spawn(move || async move {
                stall::watch(
                    "shard main",
                    shard_main(
                        config,
                        image,
                        mesh,
                        served,
                        stalls,
                        boot,
                        ShardLinks { ready, driven },
                    ),
                )
                .await
            })
            .map_err(|e| BootError::Executor {
                shard: i,
                reason: e.to_string(),
            })?;
        handles.push(h);
    }
    drop(ready_tx);
    let mut ready = 0;
    while ready < shards {
        match ready_rx.recv() {
            Ok(Ok(_)) => ready += 1,
            Ok(Err(reason)) => {
                return Err(BootError::Executor {
                    shard: ready,
                    reason,
                })
            }
            Err(_) => {
                return Err(BootError::Executor {
                    shard: ready,
                    reason: "shard exited during boot".into(),
                })
            }
        }
    }
    drop(reservations);
    // One line per client listener, then the line scripts wait for.
    for (addr, l) in served.iter() {
        println!(
            "fjord listener {} ({}) on {addr}",
            l.name,
            l.protocol.name()
        );
    }
    println!(
        "fjord {} listening on {bound} ({shards} shards, data in {})",
        env!("CARGO_PKG_VERSION"),
        data_dir.display()
    );
    use std::io::Write;
    let _ = std::io::stdout().flush();
    Ok(Node {
        handles,
        flags,
        config,
        stalls,
        drivers,
        bound,
        _lock: lock,
    })
}

impl Node {
    /// The address the client listener bound (the port resolved when the
    /// configuration gave port 0).
    pub fn address(&self) -> SocketAddr {
        self.bound
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.handles.len()
    }

    /// Runs `f` on shard `shard` (its thread, its executor) and gives its
    /// result, blocking the calling thread, which must not be a shard's.
    /// For in-process tests and tools. Errors with
    /// [`crate::mesh::ShardError::Unavailable`] when there is no such shard
    /// or it stopped.
    pub fn on_shard<R, F, Fut>(&self, shard: usize, f: F) -> Result<R, crate::mesh::ShardError>
    where
        R: Send + 'static,
        F: FnOnce(std::rc::Rc<Shard>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = R> + 'static,
    {
        let gone = crate::mesh::ShardError::Unavailable(shard);
        let driver = self.drivers.get(shard).ok_or(gone.clone())?;
        let (tx, rx) = crate::shard::home::reply_channel();
        let task: Task = Box::new(move || {
            Box::pin(async move {
                if let Ok(s) = crate::shard::current() {
                    tx.send(f(s).await);
                }
            })
        });
        driver.unbounded_send(task).map_err(|_| gone.clone())?;
        futures_lite::future::block_on(rx).map_err(|_| gone)
    }

    /// Stops the node in order: each shard stops accepting, hands its
    /// leaderships away (controlled shutdown), stops its quorum member,
    /// drains, flushes and closes its logs; then the clean-shutdown marker
    /// is written (KIP-966) and the stall counters printed. Errors with the
    /// reason a shard stopped the broker ([`BootError::Stopped`]).
    pub fn stop(self) -> Result<(), BootError> {
        self.flags
            .shutdown
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut clean = true;
        for h in self.handles {
            clean &= h.join().is_ok();
            if Instant::now() > deadline {
                clean = false;
                break;
            }
        }
        // Every shard closed its logs: the next registration tells the
        // controller this was a clean shutdown (KIP-966).
        let epoch = self
            .flags
            .last_broker_epoch
            .load(std::sync::atomic::Ordering::SeqCst);
        let data_dir = self.config.data_dir();
        if clean && epoch >= 0 {
            if let Err(e) = crate::cluster::controller::write_clean_shutdown(&data_dir, epoch) {
                log::warn!("cannot write the clean-shutdown marker: {e}");
            }
        }
        print_stall_summary(&self.config, &self.stalls);
        log::info!("shutdown complete");
        if let Some(reason) = crate::shard::fatal::reason() {
            return Err(BootError::Stopped {
                reason: reason.to_string(),
            });
        }
        Ok(())
    }

    /// Waits for every shard to end (without signals to wait for).
    fn join(self) {
        for h in self.handles {
            let _ = h.join();
        }
    }
}

/// The cluster-level election settings from the static configuration:
/// `min.insync.replicas` and `unclean.leader.election.enable` as set in
/// `server.properties` (Kafka's defaults 1 and false).
fn election_rules(config: &Config) -> crate::cluster::elr::ElectionRules {
    let d = crate::cluster::elr::ElectionRules::default();
    let get = |k: &str| config.topic_defaults.get(k).map(|v| v.trim().to_string());
    crate::cluster::elr::ElectionRules {
        min_insync_replicas: get("min.insync.replicas")
            .and_then(|v| v.parse().ok())
            .unwrap_or(d.min_insync_replicas),
        unclean_leader_election: get("unclean.leader.election.enable")
            .map(|v| v.eq_ignore_ascii_case("true"))
            .unwrap_or(d.unclean_leader_election),
    }
}

/// How often a joining shard's reactor wakes up (see `shard_main`).
const MESH_JOIN_TICK: Duration = Duration::from_millis(5);

/// How long a stopping shard waits for partitions still being opened.
const SHUTDOWN_OPEN_WAIT: Duration = Duration::from_secs(10);

/// How often a shard checks the shutdown flag (only at shutdown matters).
const SHUTDOWN_TICK: Duration = Duration::from_millis(50);

/// One shard's channels to the boot thread: `ready` tells it the shard
/// serves (or why it cannot); `driven` brings work from outside the shards
/// (`Node::on_shard`).
struct ShardLinks {
    ready: mpsc::Sender<Result<usize, String>>,
    driven: futures_channel::mpsc::UnboundedReceiver<Task>,
}

/// What shard 0 needs to start this node's quorum member.
struct QuorumBoot {
    settings: QuorumSettings,
    /// Where to serve the controller listener, when one is configured.
    controller_addr: Option<SocketAddr>,
    /// The node's shared flags.
    flags: Arc<NodeFlags>,
    /// The security settings every shard uses.
    security: Arc<crate::security::Security>,
}

/// How long a single-node broker waits at start for its own registration
/// (and the adoption of an earlier version's topics) before it serves.
const SINGLE_NODE_READY: Duration = Duration::from_secs(30);

/// Starts the quorum member on shard 0: the Raft node, the controller
/// listener, the broker's registration and heartbeats. A single-voter node
/// waits until its broker is alive in every shard's image (so its
/// partitions are led again) and earlier topics are adopted, so it serves
/// the same topics as before from its first request.
async fn start_quorum(shard: &std::rc::Rc<Shard>, boot: &QuorumBoot) -> Result<(), String> {
    let weak = std::rc::Rc::downgrade(shard);
    let publish: crate::cluster::quorum::state_machine::Publish = std::rc::Rc::new(move |img| {
        let weak = weak.clone();
        Box::pin(async move {
            if let Some(s) = weak.upgrade() {
                if let Err(e) = s.publish_metadata(img).await {
                    log::warn!("publishing metadata: {e}");
                }
            }
        })
    });
    let q = Quorum::start(boot.settings.clone(), publish)
        .await
        .map_err(|e| e.to_string())?;
    shard.set_quorum(q.clone());
    if let Some(addr) = boot.controller_addr {
        let listener = bind_listener(addr, &shard.config)
            .map_err(|e| format!("bind the controller listener {addr}: {e}"))?;
        log::info!("controller listener on {addr}");
        let weak = std::rc::Rc::downgrade(&q);
        stall::spawn_local(
            "controller listener",
            crate::cluster::quorum::serve(listener, weak),
        )
        .detach();
    }
    q.wait_recovered(Duration::from_secs(30)).await;
    crate::cluster::quorum::lifecycle::start(&q);
    let node = boot.settings.node_id;
    let data_dir = boot.settings.data_dir.clone();
    let adopt = {
        let q = q.clone();
        let shard = shard.clone();
        async move {
            // Adopt once this process's broker is registered and alive, in
            // the images every shard serves with: the same records lead its
            // partitions again, and only the leader serves them.
            while !q.broker_is_alive() || !alive_on_every_shard(&shard, node, q.incarnation()).await
            {
                glommio::timer::sleep(Duration::from_millis(20)).await;
            }
            crate::cluster::quorum::lifecycle::adopt_inbox(&q, &data_dir).await;
        }
    };
    if boot.settings.voters.len() == 1 {
        let waited = futures_lite::future::or(
            async {
                adopt.await;
                true
            },
            async {
                glommio::timer::sleep(SINGLE_NODE_READY).await;
                false
            },
        )
        .await;
        if !waited {
            log::warn!("broker {node} did not register with its own controller within {SINGLE_NODE_READY:?}; serving anyway");
        }
    } else {
        stall::spawn_local("adopt topics", adopt).detach();
    }
    Ok(())
}

/// Whether every shard's applied metadata image shows broker `node`
/// registered by this process (`incarnation`) and alive: the quorum's image
/// is ahead of the shards' until its publication ends, and after a kill -9
/// they may still show the previous process's registration.
async fn alive_on_every_shard(shard: &Shard, node: i32, incarnation: uuid::Uuid) -> bool {
    for target in 0..shard.shards {
        let alive = shard
            .invoke_on(target, move |s| async move {
                s.metadata()
                    .registrations
                    .get(&node)
                    .is_some_and(|b| b.incarnation_id == incarnation && b.is_alive())
            })
            .await;
        if alive != Ok(true) {
            return false;
        }
    }
    true
}

async fn shard_main(
    config: Arc<Config>,
    image: Arc<MetadataImage>,
    mesh: MeshBuilder<Task, glommio::channels::channel_mesh::Full>,
    served: Arc<Vec<(SocketAddr, Arc<crate::security::ListenerSecurity>)>>,
    stalls: Arc<[ShardStallStats]>,
    boot: Arc<QuorumBoot>,
    links: ShardLinks,
) {
    let ShardLinks { ready, driven } = links;
    // glommio's mesh join can miss the cross-thread wake-up of its last
    // step: a shard whose executor has nothing else to do then sleeps in
    // io_uring forever (seen about once in 50 starts on two cores). A timer
    // keeps the reactor turning while it joins, so a missed wake-up costs a
    // tick, not the start.
    let ticker = glommio::spawn_local(async {
        loop {
            glommio::timer::sleep(MESH_JOIN_TICK).await;
        }
    });
    let joined = mesh.join().await;
    drop(ticker);
    let (senders, receivers) = match joined {
        Ok(x) => x,
        Err(_) => {
            let _ = ready.send(Err("cannot join the channel mesh".into()));
            return;
        }
    };
    stall::install(
        senders.peer_id(),
        stalls.clone(),
        Duration::from_micros(config.reactor_stall_threshold_us),
        config.reactor_stall_rusage,
    );
    let metrics_on = config.metrics_listener.is_some();
    let shard = Shard::install(
        config,
        boot.security.clone(),
        image.clone(),
        senders,
        receivers,
    );
    // The coordinators follow their partitions' leadership from the first
    // image on.
    crate::group::GroupCoordinator::install(&shard);
    crate::txn::TransactionCoordinator::install(&shard);
    crate::share_coordinator::install(&shard);
    let flags = boot.flags.clone();
    if !flags.by_signal {
        let f = flags.clone();
        crate::shard::fatal::stop_with(move || {
            f.shutdown.store(true, std::sync::atomic::Ordering::SeqCst)
        });
    }
    // Work sent from outside the shards (`Node::on_shard`).
    stall::spawn_local("driver", async move {
        let mut driven = driven;
        while let Some(task) = futures_lite::StreamExt::next(&mut driven).await {
            glommio::spawn_local(task()).detach();
        }
    })
    .detach();
    if metrics_on {
        let stalls = stalls.clone();
        let id = shard.id;
        stall::spawn_local("metrics sync", async move {
            loop {
                if let Some(s) = stalls.get(id) {
                    sync_write_stats(s);
                }
                glommio::timer::sleep(METRICS_SYNC).await;
            }
        })
        .detach();
    }
    if shard.id == 0 {
        if let Err(e) = start_quorum(&shard, &boot).await {
            let _ = ready.send(Err(format!("metadata quorum: {e}")));
            return;
        }
        flags
            .metadata_ready
            .store(true, std::sync::atomic::Ordering::SeqCst);
    } else {
        while !flags
            .metadata_ready
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            if flags.shutdown.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            glommio::timer::sleep(Duration::from_millis(5)).await;
        }
    }
    // The partitions of the image this node caught up to open off the
    // reactor; the coordinators start (on the state their partitions
    // loaded) and clients are accepted once every shard opened them, as
    // before (docs/decisions/partitions-open-off-the-reactor.md).
    crate::shard::opened_everywhere(&shard, u64::MAX, None).await;
    crate::group::GroupCoordinator::start(&shard);
    crate::txn::TransactionCoordinator::start(&shard);
    shard.start_retention();
    shard.start_cleaner();
    shard.start_producer_expiration();
    shard.start_hw_checkpoint();
    crate::replication::remote::Remote::install(&shard);
    crate::replication::share_store::CoordinatorStore::install(&shard, |s| {
        Box::pin(
            async move { crate::handlers::find_coordinator::ensure_share_state_topic(&s).await },
        )
    });
    crate::txn::verify::CoordinatorVerifier::install(&shard);
    crate::replication::isr::start_isr_check(&shard);
    crate::replication::fetcher::start(&shard);
    let mut accepts = Vec::new();
    for (addr, security) in served.iter() {
        let listener = match bind_listener(*addr, &shard.config) {
            Ok(l) => l,
            Err(e) => {
                let _ = ready.send(Err(format!("bind {addr}: {e}")));
                return;
            }
        };
        accepts.push(accept_loop(shard.clone(), listener, security.clone()));
    }
    let _ = ready.send(Ok(shard.id));
    while !flags.shutdown.load(std::sync::atomic::Ordering::SeqCst) {
        glommio::timer::sleep(SHUTDOWN_TICK).await;
    }
    drop(accepts);
    if let Some(q) = shard.quorum() {
        // Move leadership away first (controlled shutdown), then stop Raft.
        crate::cluster::quorum::lifecycle::controlled_shutdown(&q, Duration::from_secs(5)).await;
        q.stop().await;
        // A run that never registered leaves the registration (and its
        // epoch) of the run before it in place.
        if let Some(epoch) = q.broker_epoch().or(q.settings().previous_broker_epoch) {
            flags
                .last_broker_epoch
                .store(epoch, std::sync::atomic::Ordering::SeqCst);
        }
    }
    // Let in-flight appends finish (their futures run on this executor),
    // and partitions still opening end, so they are closed cleanly too.
    glommio::timer::sleep(SHUTDOWN_TICK).await;
    if !shard
        .wait_opened(u64::MAX, Some(Instant::now() + SHUTDOWN_OPEN_WAIT))
        .await
    {
        log::warn!(
            "shard {}: partitions still opening at shutdown are not closed",
            shard.id
        );
    }
    // Nothing is served any more: the close blocks the reactor on purpose
    // (flushes, indexes, snapshots), which is no stall; its time is logged.
    stall::stop();
    let closing = Instant::now();
    shard.close_all();
    log::info!(
        "shard {}: partitions closed in {} ms",
        shard.id,
        closing.elapsed().as_millis()
    );
    if let Some(s) = stalls.get(shard.id) {
        sync_write_stats(s);
    }
}

/// Accepts connections of one listener on this shard and serves each with
/// the listener's security (`net::connection::serve`); ends when the task
/// is dropped.
fn accept_loop(
    shard: std::rc::Rc<Shard>,
    listener: TcpListener,
    security: Arc<crate::security::ListenerSecurity>,
) -> glommio::Task<()> {
    stall::spawn_local("accept", async move {
        loop {
            match listener.accept().await {
                Ok(stream) => {
                    let peer = stream
                        .peer_addr()
                        .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
                    // A bug that panics while serving one connection must
                    // not take the shard (and every other client) down:
                    // the panic ends that connection only.
                    let conn = std::panic::AssertUnwindSafe(crate::net::connection::serve(
                        shard.clone(),
                        stream,
                        peer,
                        security.clone(),
                    ));
                    stall::spawn_local("connection", async move {
                        if futures_lite::FutureExt::catch_unwind(conn).await.is_err() {
                            log::error!("closing connection from {peer}: the request handler panicked (a bug; see the panic message above)");
                        }
                    })
                    .detach();
                }
                Err(e) => {
                    log::warn!("accept failed: {e}");
                    glommio::timer::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    })
}
