//! The metadata quorum: an openraft group with one voter per controller
//! node, hosted on shard 0 of each node (KRaft's `__cluster_metadata`).
//!
//! - [`Quorum::start`] opens the log and state machine under
//!   `__cluster_metadata-0/`, starts the Raft node on this shard's executor
//!   ([`runtime`]), and on an empty log initializes the group with the
//!   configured voters (every voter does, with the same membership, which
//!   openraft allows).
//! - [`Quorum::submit`] takes a [`ControllerRequest`] from this node: decided
//!   here when this node is the active controller, otherwise forwarded to it
//!   over the controller listener; answered once the records are committed
//!   and applied on this node.
//! - [`serve`] answers the other nodes on the controller listener.
//! - Timers: the active controller fences brokers whose heartbeats stopped
//!   (`broker.session.timeout.ms`); every node registers its broker and
//!   heartbeats ([`lifecycle`]).

pub mod lifecycle;
pub mod log_store;
pub mod metrics;
pub mod network;
pub mod observer;
pub mod publisher;
pub mod rpc;
pub mod runtime;
pub mod server;
pub mod state_machine;
pub mod types;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::rt::WatchReceiver;
use openraft::{BasicNode, ReadPolicy, ServerState};

use self::log_store::LogStore;
use self::network::NetworkFactory;
use self::publisher::Publisher;
use self::rpc::{
    Answer, ControllerUnavailable, Peers, QuorumRequest, QuorumResponse, QuorumStatus,
    ReplicaStatus,
};
use self::state_machine::{Publish, StateMachine};
use self::types::{kafka_id, raft_id, MetadataEntry, MetadataRaft};
use super::control::{
    decide, expire_sessions, ControllerReply, ControllerRequest, Liveness, RandomDice, Rules,
};
use super::metadata::{Endpoint, MetadataImage};

pub use self::server::serve;

/// The settings of this node's quorum member.
#[derive(Debug, Clone)]
pub struct QuorumSettings {
    /// `node.id`.
    pub node_id: i32,
    /// `cluster.id`.
    pub cluster_id: String,
    /// The data directory (`log.dirs`).
    pub data_dir: PathBuf,
    /// The voters (`controller.quorum.voters`): node id and `host:port` of
    /// its controller listener. One voter with no address: a single-node
    /// cluster that needs no network.
    pub voters: Vec<(i32, String)>,
    /// `controller.quorum.election.timeout.ms`.
    pub election_timeout: Duration,
    /// `broker.session.timeout.ms`.
    pub session_timeout: Duration,
    /// `broker.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// `controller.quorum.request.timeout.ms`: how long a request for the
    /// active controller is retried.
    pub request_timeout: Duration,
    /// This broker's client endpoints (registered).
    pub endpoints: Vec<Endpoint>,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// Whether this node is a voter (`process.roles` has `controller`); a
    /// broker-only node observes the quorum: it fetches the committed log
    /// from the active controller ([`observer`]).
    pub voter: bool,
    /// `leader.imbalance.check.interval.seconds` when
    /// `auto.leader.rebalance.enable` is true; None: no automatic
    /// preferred-leader elections.
    pub leader_rebalance_every: Option<Duration>,
    /// The cluster-level `min.insync.replicas` and
    /// `unclean.leader.election.enable` (static configs) the controller's
    /// elections and ELR follow.
    pub election: crate::cluster::elr::ElectionRules,
    /// The broker epoch of this node's last clean shutdown (the
    /// clean-shutdown marker, KIP-966's `PreviousBrokerEpoch`); None after
    /// an unclean one.
    pub previous_broker_epoch: Option<i64>,
    /// How this node connects to the others' controller listeners (their
    /// protocol, `sasl.mechanism.controller.protocol` and its credentials).
    pub controller_client: crate::security::ClientSecurity,
    /// The security of this node's own controller listener (None: it
    /// serves none).
    pub controller_listener: Option<std::sync::Arc<crate::security::ListenerSecurity>>,
    /// `super.users`: the principals welcome on a controller listener that
    /// is not PLAINTEXT.
    pub super_users: Vec<crate::security::principal::KafkaPrincipal>,
    /// The credentials of `fjord format --add-scram`
    /// (`cluster::bootstrap_scram`).
    pub bootstrap_scram: Vec<crate::cluster::bootstrap_scram::BootstrapCredential>,
}

impl QuorumSettings {
    /// What this node presents to the other nodes' controller listeners.
    pub fn peer_auth(&self) -> rpc::PeerAuth {
        rpc::PeerAuth {
            cluster_id: self.cluster_id.clone(),
            client: self.controller_client.clone(),
        }
    }
}

/// The quorum member of this node (on shard 0).
pub struct Quorum {
    settings: QuorumSettings,
    /// The Raft node (voters only).
    raft: Option<MetadataRaft>,
    /// The log (voters: the active controller serves observers from it).
    log: Option<LogStore>,
    /// A broker-only node's view of the quorum.
    observer: Option<observer::Observer>,
    /// On the active controller: each observer's next wanted offset and
    /// when it last fetched.
    observers: RefCell<BTreeMap<i32, (u64, Instant)>>,
    state: StateMachine,
    publisher: Rc<Publisher>,
    peers: Peers,
    /// The active controller decides one request at a time (on this shard).
    deciding: Cell<bool>,
    waiters: RefCell<Vec<futures_channel::oneshot::Sender<()>>>,
    liveness: RefCell<Liveness>,
    rules: Rules,
    /// This broker's registration epoch, once registered.
    broker_epoch: Cell<Option<i64>>,
    /// This process's incarnation id (its broker registration's).
    incarnation: uuid::Uuid,
    /// Set when the broker shuts down: heartbeats ask for controlled shutdown.
    pub(crate) shutting_down: Cell<bool>,
}

impl std::fmt::Debug for Quorum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quorum")
            .field("node_id", &self.settings.node_id)
            .finish()
    }
}

fn open_files_limit() -> Option<i64> {
    // SAFETY: getrlimit on a local struct.
    unsafe {
        let mut l: libc::rlimit = std::mem::zeroed();
        (libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0).then_some(l.rlim_cur as i64)
    }
}

/// Why the quorum could not start.
#[derive(Debug, thiserror::Error)]
pub enum QuorumStartError {
    /// The log or snapshot could not be read.
    #[error("cannot open the metadata log: {0}")]
    Storage(#[from] io::Error),
    /// openraft refused to start.
    #[error("cannot start the metadata quorum: {0}")]
    Raft(String),
}

impl Quorum {
    /// Starts this node's quorum member; `publish` hands each applied image
    /// to the node's shards. The controller listener must be served next
    /// (the other voters elect through it); [`Quorum::wait_recovered`] then
    /// waits for the image the node had.
    pub async fn start(
        settings: QuorumSettings,
        publish: Publish,
    ) -> Result<Rc<Quorum>, QuorumStartError> {
        let empty = MetadataImage::empty(settings.cluster_id.clone());
        // The one path of images to the shards (see `publisher`), held
        // until `wait_recovered`: the shards see no image of the replay.
        let publisher = Rc::new(Publisher::held(empty.clone(), publish));
        let p = publisher.clone();
        let sm_publish: Publish = Rc::new(move |img| {
            let p = p.clone();
            Box::pin(async move { p.applied(img).await })
        });
        if !settings.voter {
            // A broker-only node: no log of its own, the image comes from
            // the active controller.
            let state = StateMachine::in_memory(empty, sm_publish);
            let q = Rc::new(Quorum::new(settings, None, None, state, publisher));
            observer::start(&q);
            return Ok(q);
        }
        let log = LogStore::open(&settings.data_dir)?;
        let fresh = log.is_empty();
        let state = StateMachine::open(&settings.data_dir, empty, sm_publish)?;
        // Start-up order, explicit: (1) the stored snapshot's image (the
        // empty one without a snapshot) is the publisher's before openraft
        // runs; (2) `MetadataRaft::new` re-applies the committed entries
        // after it; (3) the entries committed from then on follow; (4)
        // `wait_recovered` releases the publisher once the node caught up.
        // All of them through the one publisher, which never lets the
        // offset an image reflects go back.
        publisher.applied(state.image()).await;
        let single = settings.voters.len() == 1;
        let election_ms = settings.election_timeout.as_millis().max(100) as u64;
        let config = openraft::Config {
            cluster_name: settings.cluster_id.clone(),
            // openraft also takes the heartbeat interval as the timeout of
            // its AppendEntries; the network stretches that to at least one
            // election timeout (see `network.rs`).
            heartbeat_interval: (election_ms / 3).max(20),
            election_timeout_min: election_ms,
            election_timeout_max: election_ms * 2,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(1000),
            max_in_snapshot_log_to_keep: 100,
            ..Default::default()
        }
        .validate()
        .map_err(|e| QuorumStartError::Raft(e.to_string()))?;
        let raft = MetadataRaft::new(
            raft_id(settings.node_id),
            Arc::new(config),
            NetworkFactory {
                auth: settings.peer_auth(),
                voters: settings.voters.iter().cloned().collect(),
                min_timeout: settings.election_timeout,
            },
            log.clone(),
            state.clone(),
        )
        .await
        .map_err(|e| QuorumStartError::Raft(e.to_string()))?;
        if fresh {
            let members: BTreeMap<u64, BasicNode> = settings
                .voters
                .iter()
                .map(|(id, addr)| (raft_id(*id), BasicNode { addr: addr.clone() }))
                .collect();
            // Not awaited here: with several voters it completes only once
            // they answer, through the controller listener served next.
            let r = raft.clone();
            crate::stall::spawn_local("metadata quorum initialize", async move {
                if let Err(e) = r.initialize(members).await {
                    log::info!("metadata quorum: not initialized here ({e})");
                }
            })
            .detach();
        }
        if single && !fresh {
            // One voter restarting: no need to wait an election timeout
            // (a fresh one was elected by `initialize`).
            let _ = raft.trigger().elect(false).await;
        }
        let q = Rc::new(Quorum::new(
            settings,
            Some(raft),
            Some(log),
            state,
            publisher,
        ));
        q.clone().watch_leader();
        q.clone().expire_sessions_periodically();
        q.clone().rebalance_leaders_periodically();
        Ok(q)
    }

    fn new(
        settings: QuorumSettings,
        raft: Option<MetadataRaft>,
        log: Option<LogStore>,
        state: StateMachine,
        publisher: Rc<Publisher>,
    ) -> Quorum {
        let observer = (!settings.voter).then(observer::Observer::default);
        Quorum {
            rules: Rules {
                session_timeout: settings.session_timeout,
                open_files_limit: open_files_limit(),
                election: settings.election,
                node_id: settings.node_id,
            },
            peers: Peers::new(settings.peer_auth()),
            settings,
            raft,
            log,
            observer,
            observers: RefCell::new(BTreeMap::new()),
            state,
            publisher,
            deciding: Cell::new(false),
            waiters: RefCell::new(Vec::new()),
            liveness: RefCell::new(Liveness::default()),
            broker_epoch: Cell::new(None),
            incarnation: uuid::Uuid::new_v4(),
            shutting_down: Cell::new(false),
        }
    }

    /// Waits until the state machine has applied what was committed before
    /// this start (up to `timeout`), so the node serves the image it had; a
    /// broker-only node waits for its first fetch of the log.
    /// Then the held publisher is released: the shards get the recovered
    /// image first, never one of the replay.
    pub async fn wait_recovered(&self, timeout: Duration) {
        match (&self.raft, &self.observer) {
            (Some(raft), _) => {
                if let Err(e) = raft.wait_for_recovery(Some(timeout)).await {
                    log::warn!("metadata quorum: recovery of the committed log not confirmed: {e}");
                }
            }
            (None, Some(o)) => {
                if !o.wait_synced(timeout).await {
                    log::warn!("metadata: no controller answered within {timeout:?}; serving what is known");
                }
            }
            (None, None) => {}
        }
        self.publisher.release().await;
    }

    /// This node's id.
    pub fn node_id(&self) -> i32 {
        self.settings.node_id
    }

    /// Whether this process's broker registration is in the applied image
    /// and alive (registered, unfenced).
    pub fn broker_is_alive(&self) -> bool {
        let image = self.state.image();
        image
            .registrations
            .get(&self.settings.node_id)
            .is_some_and(|b| b.incarnation_id == self.incarnation && b.is_alive())
    }

    /// This process's incarnation id.
    pub fn incarnation(&self) -> uuid::Uuid {
        self.incarnation
    }

    /// This broker's epoch, once it registered.
    pub fn broker_epoch(&self) -> Option<i64> {
        self.broker_epoch.get()
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &QuorumSettings {
        &self.settings
    }

    /// The active controller as this node knows it.
    pub fn leader(&self) -> Option<i32> {
        match (&self.raft, &self.observer) {
            (Some(raft), _) => raft.metrics().borrow_watched().current_leader.map(kafka_id),
            (None, Some(o)) => o.leader(),
            (None, None) => None,
        }
    }

    /// Whether this node is the active controller.
    pub fn is_leader(&self) -> bool {
        self.raft.as_ref().is_some_and(|raft| {
            let m = raft.metrics();
            let m = m.borrow_watched();
            m.state == ServerState::Leader
        })
    }

    /// The metadata offset applied on this node.
    pub fn applied_offset(&self) -> u64 {
        self.state.image().offset
    }

    /// The image applied on this node.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.state.image()
    }

    /// Waits (up to `timeout`) until this node applied `offset`.
    pub async fn wait_applied(&self, offset: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let Some(raft) = &self.raft else {
            // A broker-only node applies what it fetches: poll.
            while self.applied_offset() < offset {
                if Instant::now() >= deadline {
                    return false;
                }
                glommio::timer::sleep(Duration::from_millis(10)).await;
            }
            return true;
        };
        let mut m = raft.metrics();
        m.borrow_and_update();
        loop {
            if self.applied_offset() >= offset {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let changed = futures_lite::future::or(async { m.changed().await.is_ok() }, async {
                glommio::timer::sleep(left).await;
                false
            })
            .await;
            if !changed && self.applied_offset() < offset {
                return false;
            }
        }
    }

    /// How long one forwarded attempt may take: two election timeouts (at
    /// least 500 ms).
    fn attempt_timeout(&self) -> Duration {
        (self.settings.election_timeout * 2).max(Duration::from_millis(500))
    }

    fn voter_addr(&self, id: i32) -> Option<&str> {
        self.settings
            .voters
            .iter()
            .find(|(v, _)| *v == id)
            .map(|(_, a)| a.as_str())
    }

    async fn lock_deciding(&self) -> DecidingGuard<'_> {
        while self.deciding.get() {
            let (tx, rx) = futures_channel::oneshot::channel();
            self.waiters.borrow_mut().push(tx);
            let _ = rx.await;
        }
        self.deciding.set(true);
        DecidingGuard(self)
    }

    /// Decides `req` as the active controller, commits its records and
    /// answers once they are applied here. NotController when this node is
    /// not the active controller.
    pub async fn handle(&self, req: ControllerRequest) -> Result<Answer, ControllerUnavailable> {
        let _g = self.lock_deciding().await;
        let not_controller =
            |q: &Quorum| ControllerUnavailable::NotController { leader: q.leader() };
        let Some(raft) = self.raft.as_ref().filter(|_| self.is_leader()) else {
            return Err(not_controller(self));
        };
        // Every committed entry applied first: decisions see the latest image.
        if raft
            .ensure_linearizable(ReadPolicy::ReadIndex)
            .await
            .is_err()
        {
            // No quorum behind this leader: nothing can be decided, but a
            // heartbeat is still proof of life. Recorded, a broker that kept
            // heartbeating through the outage (this node's own included) is
            // not fenced as expired the moment the quorum is back.
            if let ControllerRequest::BrokerHeartbeat { broker_id, .. } = &req {
                self.liveness.borrow_mut().beat(*broker_id, Instant::now());
            }
            return Err(not_controller(self));
        }
        let image = self.state.image();
        let decision = decide(
            &image,
            &req,
            &mut self.liveness.borrow_mut(),
            Instant::now(),
            &self.rules,
            &mut RandomDice,
        );
        if decision.records.is_empty() {
            return Ok(Answer {
                reply: decision.reply,
                offset: image.offset,
            });
        }
        let written = raft
            .client_write(MetadataEntry {
                records: decision.records,
            })
            .await;
        match written {
            Ok(w) => {
                let offset = w.log_id.index;
                let reply = match decision.reply {
                    ControllerReply::RegisterBroker(Ok(_)) => {
                        ControllerReply::RegisterBroker(Ok(offset as i64))
                    }
                    other => other,
                };
                Ok(Answer { reply, offset })
            }
            Err(e) => {
                log::info!("metadata quorum: write not committed here: {e}");
                Err(not_controller(self))
            }
        }
    }

    /// Sends `req` to the active controller (this node or another) and
    /// gives its answer once this node applied it; retried through
    /// elections and unreachable controllers for
    /// `controller.quorum.request.timeout.ms` (this broker's own requests:
    /// registration, heartbeats, features at start-up).
    pub async fn submit(&self, req: ControllerRequest) -> Result<Answer, ControllerUnavailable> {
        self.submit_within(req, self.settings.request_timeout).await
    }

    /// [`Self::submit`] retried for `timeout` (a client's request:
    /// `controller.socket.timeout.ms`, as Kafka's broker forwards it).
    pub async fn submit_within(
        &self,
        req: ControllerRequest,
        timeout: Duration,
    ) -> Result<Answer, ControllerUnavailable> {
        let deadline = Instant::now() + timeout;
        let mut last = String::from("no active controller");
        let wire = QuorumRequest::Controller(req.clone());
        while Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.leader() {
                Some(l) if l == self.settings.node_id => {
                    // Bounded: without a quorum the commit waits, and the
                    // caller must get its timeout.
                    match within(left, self.handle(req.clone())).await {
                        Some(Ok(a)) => return Ok(a),
                        Some(Err(e)) => last = e.to_string(),
                        None => last = "the active controller did not commit in time".into(),
                    }
                }
                Some(l) => match self.voter_addr(l).map(str::to_string) {
                    // One attempt waits at most two election timeouts: a
                    // controller cut off meanwhile is replaced by then, and
                    // the next attempt goes to its successor.
                    Some(addr) => match self
                        .peers
                        .call(&addr, &wire, left.min(self.attempt_timeout()))
                        .await
                    {
                        Ok(QuorumResponse::Controller(Ok(a))) => {
                            let left = deadline.saturating_duration_since(Instant::now());
                            self.wait_applied(a.offset, left.max(Duration::from_millis(500)))
                                .await;
                            return Ok(a);
                        }
                        Ok(QuorumResponse::Controller(Err(e))) => last = e.to_string(),
                        Ok(other) => last = format!("unexpected answer {other:?}"),
                        Err(e) => last = format!("controller {l} at {addr}: {e}"),
                    },
                    None => last = format!("controller {l} is not a known voter"),
                },
                None => {}
            }
            glommio::timer::sleep(Duration::from_millis(100).min(left)).await;
        }
        Err(ControllerUnavailable::Timeout {
            timeout_ms: timeout.as_millis() as u64,
            last,
        })
    }

    /// The quorum's state when this node is the active controller
    /// (NotController otherwise): voters and learners with how far their
    /// logs match the leader's and when they last answered.
    pub fn status(&self) -> Result<QuorumStatus, ControllerUnavailable> {
        let Some(raft) = &self.raft else {
            return Err(ControllerUnavailable::NotController {
                leader: self.leader(),
            });
        };
        let m = raft.metrics().borrow_watched().clone();
        if m.state != ServerState::Leader {
            return Err(ControllerUnavailable::NotController {
                leader: m.current_leader.map(kafka_id),
            });
        }
        let now = Instant::now();
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let wall_of = |t: Instant| wall - now.saturating_duration_since(t).as_millis() as i64;
        let replication = m.replication.clone().unwrap_or_default();
        let heartbeat = m.heartbeat.clone().unwrap_or_default();
        let committed = m.cluster_committed.map_or(0, |c| c.index as i64 + 1);
        let replica = |id: u64| {
            let matched = if id == m.id {
                m.last_log_index.map(|i| i as i64 + 1)
            } else {
                replication
                    .get(&id)
                    .cloned()
                    .flatten()
                    .map(|l| l.index as i64 + 1)
            };
            let last = if id == m.id {
                Some(wall)
            } else {
                heartbeat.get(&id).cloned().flatten().map(|t| wall_of(*t))
            };
            ReplicaStatus {
                node_id: kafka_id(id),
                log_end_offset: matched.unwrap_or(-1),
                last_fetch_ms: last.unwrap_or(-1),
                last_caught_up_ms: match matched {
                    Some(leo) if leo >= committed => last.unwrap_or(-1),
                    _ => -1,
                },
            }
        };
        let membership = m.membership_config.membership();
        Ok(QuorumStatus {
            leader_id: kafka_id(m.id),
            leader_epoch: m.current_term as i64,
            high_watermark: committed,
            voters: membership.voter_ids().map(replica).collect(),
            observers: self
                .observers
                .borrow()
                .iter()
                .map(|(id, (next, at))| ReplicaStatus {
                    node_id: *id,
                    log_end_offset: *next as i64,
                    last_fetch_ms: wall_of(*at),
                    last_caught_up_ms: if *next as i64 >= committed {
                        wall_of(*at)
                    } else {
                        -1
                    },
                })
                .collect(),
            endpoints: membership
                .nodes()
                .map(|(id, n)| (kafka_id(*id), n.addr.clone()))
                .collect(),
        })
    }

    /// The quorum's state from the active controller (this node or the one
    /// it knows of), for DescribeQuorum.
    pub async fn describe(&self) -> Result<QuorumStatus, ControllerUnavailable> {
        let timeout = self.settings.request_timeout;
        match self.leader() {
            Some(l) if l == self.settings.node_id => self.status(),
            Some(l) => {
                let addr = self
                    .voter_addr(l)
                    .map(str::to_string)
                    .ok_or(ControllerUnavailable::NotController { leader: Some(l) })?;
                match self
                    .peers
                    .call(&addr, &QuorumRequest::Describe, timeout)
                    .await
                {
                    Ok(QuorumResponse::Describe(r)) => r,
                    Ok(other) => Err(ControllerUnavailable::Stopped {
                        reason: format!("unexpected answer {other:?}"),
                    }),
                    Err(e) => Err(ControllerUnavailable::Timeout {
                        timeout_ms: timeout.as_millis() as u64,
                        last: e.to_string(),
                    }),
                }
            }
            None => Err(ControllerUnavailable::NotController { leader: None }),
        }
    }

    /// Publishes a new image whenever the active controller changes, and
    /// gives brokers fresh sessions when this node becomes it.
    fn watch_leader(self: Rc<Self>) {
        let me = Rc::downgrade(&self);
        let Some(raft) = &self.raft else { return };
        let mut metrics = raft.metrics();
        drop(self);
        crate::stall::spawn_local("metadata quorum leader", async move {
            let mut was_leader = false;
            loop {
                let Some(q) = me.upgrade() else { break };
                let (leader, is_leader) = {
                    let m = metrics.borrow_watched();
                    (
                        m.current_leader.map(kafka_id),
                        m.state == ServerState::Leader,
                    )
                };
                if is_leader && !was_leader {
                    log::info!("node {} is now the active controller", q.settings.node_id);
                    q.liveness
                        .borrow_mut()
                        .reset(&q.state.image(), Instant::now());
                }
                was_leader = is_leader;
                // Published apart: a slow publication must not hold up the
                // next leadership change (the takeover's liveness reset
                // above runs at once).
                let publisher = q.publisher.clone();
                crate::stall::spawn_local("metadata controller id", async move {
                    publisher.controller(leader.unwrap_or(-1)).await;
                })
                .detach();
                drop(q);
                if metrics.changed().await.is_err() {
                    break;
                }
            }
        })
        .detach();
    }

    /// On the active controller: fences brokers whose session expired.
    fn expire_sessions_periodically(self: Rc<Self>) {
        let every = (self.settings.session_timeout / 8).max(Duration::from_millis(50));
        self.decide_periodically("broker sessions", "fencing brokers", every, |q, image| {
            expire_sessions(image, &q.liveness.borrow(), Instant::now(), &q.rules)
        });
    }

    /// On the active controller, every `leader.imbalance.check.interval.seconds`
    /// (with `auto.leader.rebalance.enable`): preferred-leader elections
    /// for every partition whose first replica is an alive ISR member that
    /// does not lead it (KRaft's `maybeBalancePartitionLeaders`).
    fn rebalance_leaders_periodically(self: Rc<Self>) {
        let Some(every) = self.settings.leader_rebalance_every else {
            return;
        };
        self.decide_periodically(
            "leader rebalance",
            "preferred-leader elections",
            every,
            |q, image| {
                let (records, _) = crate::cluster::election::elect_leaders(
                    image,
                    &q.rules.election,
                    crate::cluster::election::ElectionType::Preferred,
                    None,
                );
                if !records.is_empty() {
                    log::info!(
                        "{} partition(s) not led by their preferred replica: electing it",
                        records.len()
                    );
                }
                records
            },
        );
    }

    /// Every `every`, while this node is the active controller: under the
    /// decision lock, `decide` gives records from the current image, and
    /// they are committed (`what` names them in the log; a failure waits
    /// for the next period). Runs on a task named `label` until the quorum
    /// is gone.
    fn decide_periodically(
        self: Rc<Self>,
        label: &'static str,
        what: &'static str,
        every: Duration,
        decide: impl Fn(&Quorum, &MetadataImage) -> Vec<crate::cluster::records::MetadataRecord>
            + 'static,
    ) {
        let me = Rc::downgrade(&self);
        drop(self);
        crate::stall::spawn_local(label, async move {
            loop {
                glommio::timer::sleep(every).await;
                let Some(q) = me.upgrade() else { break };
                if !q.is_leader() {
                    continue;
                }
                let _g = q.lock_deciding().await;
                let records = decide(&q, &q.state.image());
                if records.is_empty() {
                    continue;
                }
                if !q.commit_own(records, what).await {
                    break;
                }
            }
        })
        .detach();
    }

    /// On the active controller: commits `records` it decided itself
    /// (`what` names them in the log), within
    /// `controller.quorum.request.timeout.ms`; a failure is logged and the
    /// next period tries again. Gives false once there is no Raft node.
    async fn commit_own(
        &self,
        records: Vec<crate::cluster::records::MetadataRecord>,
        what: &str,
    ) -> bool {
        let timeout = self.settings.request_timeout;
        let Some(raft) = self.raft.as_ref() else {
            return false;
        };
        match within(timeout, raft.client_write(MetadataEntry { records })).await {
            Some(Ok(_)) => {}
            Some(Err(e)) => log::warn!("{what} failed: {e}"),
            None => log::warn!("{what}: not committed within {timeout:?}"),
        }
        true
    }

    /// Stops the Raft node (shutdown).
    pub async fn stop(&self) {
        if let Some(raft) = &self.raft {
            if let Err(e) = raft.shutdown().await {
                log::warn!("metadata quorum shutdown: {e}");
            }
        }
    }

    /// On the active controller: the committed log from offset `from`, for
    /// the broker-only node `broker` (KRaft observers fetch it the same
    /// way). Waits up to `wait` for something new when there is nothing.
    pub async fn fetch_log(
        &self,
        broker: i32,
        from: u64,
        wait: Duration,
    ) -> Result<rpc::LogChunk, ControllerUnavailable> {
        let not_controller = || ControllerUnavailable::NotController {
            leader: self.leader(),
        };
        let (Some(raft), Some(log)) = (self.raft.as_ref(), self.log.as_ref()) else {
            return Err(not_controller());
        };
        if !self.is_leader() {
            return Err(not_controller());
        }
        self.observers
            .borrow_mut()
            .insert(broker, (from, Instant::now()));
        let committed = || {
            raft.metrics()
                .borrow_watched()
                .cluster_committed
                .map(|c| c.index)
        };
        let deadline = Instant::now() + wait;
        // One receiver, marked seen: `changed` then waits for a new value
        // (a fresh clone would see the old one as unseen and spin).
        let mut m = raft.metrics();
        m.borrow_and_update();
        loop {
            let upto = committed();
            let has_new = upto.is_some_and(|c| c >= from);
            if has_new || Instant::now() >= deadline {
                let upto = upto.unwrap_or(0);
                let first = log.first_index();
                let mut chunk = rpc::LogChunk {
                    leader_id: self.settings.node_id,
                    committed: upto,
                    snapshot: None,
                    entries: Vec::new(),
                };
                let mut start = from;
                if first.is_some_and(|f| from < f) {
                    // Purged below `from`: the image, then what follows it.
                    let image = self.state.image();
                    chunk.snapshot = Some(self.state.image_bytes().map_err(|e| {
                        ControllerUnavailable::Stopped {
                            reason: e.to_string(),
                        }
                    })?);
                    start = image.offset + 1;
                }
                if has_new {
                    chunk.entries = log.normal_entries(start, upto);
                }
                return Ok(chunk);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if let Some(Err(_)) = within(left, m.changed()).await {
                return Err(not_controller());
            }
        }
    }
}

/// `fut`'s output, or None when `timeout` passes first (the future is
/// dropped).
async fn within<T>(timeout: Duration, fut: impl std::future::Future<Output = T>) -> Option<T> {
    futures_lite::future::or(async { Some(fut.await) }, async {
        glommio::timer::sleep(timeout).await;
        None
    })
    .await
}

struct DecidingGuard<'a>(&'a Quorum);

impl Drop for DecidingGuard<'_> {
    fn drop(&mut self) {
        self.0.deciding.set(false);
        let waiters = std::mem::take(&mut *self.0.waiters.borrow_mut());
        for w in waiters {
            let _ = w.send(());
        }
    }
}

#[cfg(test)]
mod start_tests;
