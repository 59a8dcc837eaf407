//! Fetch sessions (KIP-227): the broker side's cache of incremental fetch
//! sessions of one shard, a plain data structure (no I/O, no clock).
//!
//! A session holds the partitions one fetcher (a consumer or a follower)
//! reads, each with the fetch offset and limits it last asked for and the
//! high watermark, last stable offset and log start offset last sent to it.
//! A full request (epoch 0) creates a session from its partitions; the
//! following requests are incremental (epoch N > 0, the next one): they
//! carry only new or changed partitions and `forgotten_topics_data` for
//! those the fetcher drops, and the answer carries only partitions with
//! records, a changed high watermark, last stable offset or log start
//! offset, or an error (Kafka's `CachedPartition.maybeUpdateResponseData`).
//! Epoch -1 is sessionless, and closes the session a request names.
//!
//! Each shard keeps its own cache (the shard a connection runs on); a
//! session id names its shard (`id % shards`), so ids are unique on the
//! broker and a request naming a session of another shard (a new
//! connection) is answered FETCH_SESSION_ID_NOT_FOUND, after which the
//! fetcher starts a new session (KIP-227 allows the broker to drop a
//! session at any time). `max.incremental.fetch.session.cache.slots` is
//! split evenly over the shards ([`slots_per_shard`]); a full cache evicts
//! its least recently used session. See docs/decisions/fetch-sessions.md.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use uuid::Uuid;

/// A topic as a Fetch request names it: by id from v13, by name before.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TopicRef {
    /// Topic id (Fetch v13+).
    Id(Uuid),
    /// Topic name (Fetch v4–v12).
    Name(Arc<str>),
}

/// One partition of a session.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    /// The topic, as the session's requests name it.
    pub topic: TopicRef,
    /// Partition index.
    pub partition: i32,
}

/// What a fetcher asks of one partition: the request's partition fields,
/// as on the wire (a negative epoch means "not given").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchParams {
    /// First offset wanted (a follower's LEO).
    pub fetch_offset: i64,
    /// `partition_max_bytes` (bytes).
    pub partition_max_bytes: i32,
    /// `current_leader_epoch` (v9+, KIP-320), -1 when not given.
    pub current_leader_epoch: i32,
    /// `last_fetched_epoch` (v12+), -1 when not given.
    pub last_fetched_epoch: i32,
    /// The fetcher's own log start offset (followers), -1 when not given.
    pub log_start_offset: i64,
}

/// What the broker last sent for a partition of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sent {
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
}

#[derive(Debug, Clone)]
struct CachedPartition {
    key: SessionKey,
    params: FetchParams,
    /// None before the first answer and after an error: the next answer
    /// carries the partition whatever it holds.
    sent: Option<Sent>,
}

#[derive(Debug)]
struct Session {
    /// The epoch the next incremental request must carry.
    next_epoch: i32,
    /// Whether the session's requests name topics by id (v13+).
    uses_topic_ids: bool,
    /// In answer order: partitions answered with something move to the
    /// end (Kafka does the same, so that no partition starves under
    /// `max_bytes`).
    partitions: Vec<CachedPartition>,
    /// LRU stamp: the cache's tick of the last request that used it.
    last_used: u64,
}

/// How a Fetch request is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// No session: every partition of the request is answered, session id 0.
    Sessionless,
    /// A full request that created this session (id > 0): every partition
    /// is answered, and the answer names the session.
    Full {
        /// The new session's id.
        session_id: i32,
    },
    /// An incremental request of this session: every partition of the
    /// session is read, only changed ones are answered.
    Incremental {
        /// The session's id.
        session_id: i32,
    },
}

impl Mode {
    /// The `session_id` the response carries (0 when sessionless).
    pub fn session_id(&self) -> i32 {
        match self {
            Mode::Sessionless => 0,
            Mode::Full { session_id } | Mode::Incremental { session_id } => *session_id,
        }
    }
}

/// What [`FetchSessionCache::begin`] gives: how to answer, and the
/// partitions to read, in answer order.
#[derive(Debug)]
pub struct Begun {
    /// How the request is served.
    pub mode: Mode,
    /// The partitions to read: the request's for a full or sessionless
    /// request, all of the session's (after the request's changes) for an
    /// incremental one.
    pub partitions: Vec<(SessionKey, FetchParams)>,
}

/// One partition's answer, as the session rule needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionAnswer {
    /// The partition is answered with an error.
    pub failed: bool,
    /// The answer carries records.
    pub has_records: bool,
    /// The answer carries something else a fetcher must see (a diverging
    /// epoch, a current leader).
    pub must_send: bool,
    /// High watermark answered.
    pub high_watermark: i64,
    /// Last stable offset answered.
    pub last_stable_offset: i64,
    /// Log start offset answered.
    pub log_start_offset: i64,
}

/// A request the session cache refuses (the whole request fails with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchSessionError {
    /// No such session on this shard (never created, evicted, closed, or
    /// held by another shard): FETCH_SESSION_ID_NOT_FOUND (70).
    #[error("fetch session {0} not found")]
    SessionIdNotFound(i32),
    /// The epoch is not the session's next: INVALID_FETCH_SESSION_EPOCH (71).
    #[error("fetch session {session_id} expects epoch {expected}, got {got}")]
    InvalidSessionEpoch {
        /// The session.
        session_id: i32,
        /// The epoch it expects.
        expected: i32,
        /// The epoch the request carries.
        got: i32,
    },
    /// The request names topics by id and the session by name, or the
    /// other way round: FETCH_SESSION_TOPIC_ID_ERROR (106).
    #[error("fetch session {0} used topic ids differently")]
    TopicIdUsage(i32),
}

/// Kafka's `FetchMetadata.INITIAL_EPOCH`: a full request that creates a
/// session.
pub const INITIAL_EPOCH: i32 = 0;
/// Kafka's `FetchMetadata.FINAL_EPOCH`: a sessionless request (closing
/// the session it names).
pub const FINAL_EPOCH: i32 = -1;

/// The epoch after `epoch` (Kafka `FetchMetadata.nextEpoch`: 1 after
/// `i32::MAX`, never 0 or -1 again).
pub fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        INITIAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// Takes `max.incremental.fetch.session.cache.slots` (sessions, broker
/// wide) and the shard count; gives each shard's share, rounded up (0 stays
/// 0: no sessions).
pub fn slots_per_shard(broker_slots: usize, shards: usize) -> usize {
    broker_slots.div_ceil(shards.max(1))
}

/// The fetch sessions of one shard.
#[derive(Debug)]
pub struct FetchSessionCache {
    shard: usize,
    shards: usize,
    slots: usize,
    sessions: HashMap<i32, Session>,
    /// The next session number to try (an id is number × shards + shard).
    next_number: u32,
    tick: u64,
}

impl FetchSessionCache {
    /// A cache for shard `shard` of `shards`, holding at most `slots`
    /// sessions (this shard's share, [`slots_per_shard`]); `seed` picks
    /// the first session id (ids need not be guessable, only unique).
    pub fn new(shard: usize, shards: usize, slots: usize, seed: u32) -> FetchSessionCache {
        FetchSessionCache {
            shard,
            shards: shards.max(1),
            slots,
            sessions: HashMap::new(),
            next_number: seed.max(1),
            tick: 0,
        }
    }

    /// Number of sessions held.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Whether `session_id` names a session of this shard (it may still
    /// be unknown).
    pub fn owns(&self, session_id: i32) -> bool {
        session_id > 0 && session_id as usize % self.shards == self.shard
    }

    /// Takes a request's `session_id`, `session_epoch`, whether it names
    /// topics by id (v13+), its partitions in request order and its
    /// `forgotten_topics_data`; gives how to serve it and what to read.
    /// Epoch 0 closes the named session (if any) and creates one (none
    /// when the cache has no slots: sessionless); epoch -1 closes the
    /// named session and is sessionless; any other epoch must be the named
    /// session's next: its partitions are added or updated, the forgotten
    /// ones removed, and the epoch moves on. Errors: the session is not
    /// here (FETCH_SESSION_ID_NOT_FOUND), the epoch is not the next
    /// (INVALID_FETCH_SESSION_EPOCH), topic ids used differently than at
    /// creation (FETCH_SESSION_TOPIC_ID_ERROR).
    pub fn begin(
        &mut self,
        session_id: i32,
        epoch: i32,
        uses_topic_ids: bool,
        request: Vec<(SessionKey, FetchParams)>,
        forgotten: &[SessionKey],
    ) -> Result<Begun, FetchSessionError> {
        self.tick += 1;
        if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
            if session_id != 0 {
                self.sessions.remove(&session_id);
            }
            if epoch == FINAL_EPOCH || self.slots == 0 {
                return Ok(Begun {
                    mode: Mode::Sessionless,
                    partitions: request,
                });
            }
            let id = self.create(uses_topic_ids, &request);
            return Ok(Begun {
                mode: Mode::Full { session_id: id },
                partitions: request,
            });
        }
        let tick = self.tick;
        let session = self
            .sessions
            .get_mut(&session_id)
            .filter(|_| session_id > 0)
            .ok_or(FetchSessionError::SessionIdNotFound(session_id))?;
        if session.next_epoch != epoch {
            return Err(FetchSessionError::InvalidSessionEpoch {
                session_id,
                expected: session.next_epoch,
                got: epoch,
            });
        }
        if session.uses_topic_ids != uses_topic_ids {
            return Err(FetchSessionError::TopicIdUsage(session_id));
        }
        session.next_epoch = next_epoch(epoch);
        session.last_used = tick;
        upsert(&mut session.partitions, request);
        if !forgotten.is_empty() {
            let forgotten: HashSet<&SessionKey> = forgotten.iter().collect();
            session.partitions.retain(|p| !forgotten.contains(&p.key));
        }
        Ok(Begun {
            mode: Mode::Incremental { session_id },
            partitions: session
                .partitions
                .iter()
                .map(|p| (p.key.clone(), p.params))
                .collect(),
        })
    }

    /// Takes how a request was served ([`Begun::mode`]) and the answer of
    /// each partition read, in the order read; gives, per partition,
    /// whether the response carries it. Full and sessionless answers carry
    /// all; an incremental one those with records, an error, something a
    /// fetcher must see, or a high watermark, last stable offset or log
    /// start offset other than last sent. Records what was sent; a failed
    /// partition is sent again on the next answer whatever it holds. A
    /// session gone meanwhile (evicted during a long poll) carries all.
    pub fn answered(&mut self, mode: Mode, answers: &[(SessionKey, PartitionAnswer)]) -> Vec<bool> {
        let session_id = match mode {
            Mode::Sessionless => return vec![true; answers.len()],
            Mode::Full { session_id } | Mode::Incremental { session_id } => session_id,
        };
        let full = matches!(mode, Mode::Full { .. });
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return vec![true; answers.len()];
        };
        // The answers come in the session's order unless the session
        // changed meanwhile; look keys up only then.
        let aligned = session.partitions.len() == answers.len()
            && session
                .partitions
                .iter()
                .zip(answers)
                .all(|(p, (k, _))| &p.key == k);
        let index: HashMap<SessionKey, usize> = if aligned {
            HashMap::new()
        } else {
            session
                .partitions
                .iter()
                .enumerate()
                .map(|(i, p)| (p.key.clone(), i))
                .collect()
        };
        let mut carried = Vec::with_capacity(answers.len());
        let mut moved = vec![false; session.partitions.len()];
        for (n, (key, a)) in answers.iter().enumerate() {
            let i = if aligned {
                n
            } else {
                match index.get(key) {
                    Some(i) => *i,
                    None => {
                        carried.push(true);
                        continue;
                    }
                }
            };
            let cached = &mut session.partitions[i];
            let now = Sent {
                high_watermark: a.high_watermark,
                last_stable_offset: a.last_stable_offset,
                log_start_offset: a.log_start_offset,
            };
            let changed = cached.sent != Some(now);
            let carry = full || a.failed || a.has_records || a.must_send || changed;
            cached.sent = (!a.failed).then_some(now);
            moved[i] = carry && !full;
            carried.push(carry);
        }
        // Answered partitions go to the end, in session order.
        if moved.iter().any(|m| *m) {
            let (stay, go): (Vec<_>, Vec<_>) = std::mem::take(&mut session.partitions)
                .into_iter()
                .zip(moved)
                .partition(|(_, m)| !m);
            session.partitions = stay.into_iter().chain(go).map(|(p, _)| p).collect();
        }
        carried
    }

    /// Creates a session of `request`'s partitions, evicting the least
    /// recently used one when the cache is full; gives its id.
    fn create(&mut self, uses_topic_ids: bool, request: &[(SessionKey, FetchParams)]) -> i32 {
        if self.sessions.len() >= self.slots {
            if let Some(lru) = self
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(id, _)| *id)
            {
                self.sessions.remove(&lru);
            }
        }
        let id = self.new_id();
        let mut partitions: Vec<CachedPartition> = Vec::with_capacity(request.len());
        upsert(&mut partitions, request.to_vec());
        self.sessions.insert(
            id,
            Session {
                next_epoch: 1,
                uses_topic_ids,
                partitions,
                last_used: self.tick,
            },
        );
        id
    }

    /// A positive id naming this shard (`id % shards == shard`), unused.
    fn new_id(&mut self) -> i32 {
        let max_number = ((i32::MAX as usize - self.shard) / self.shards) as u32;
        loop {
            let n = if self.next_number > max_number {
                1
            } else {
                self.next_number
            };
            self.next_number = if n >= max_number { 1 } else { n + 1 };
            let id = (n as usize * self.shards + self.shard) as i32;
            if id > 0 && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }
}

/// Adds `request`'s partitions to `partitions` (in request order) or
/// updates the fields of those already there; a partition named twice
/// keeps its last fields.
fn upsert(partitions: &mut Vec<CachedPartition>, request: Vec<(SessionKey, FetchParams)>) {
    if request.is_empty() {
        return;
    }
    let mut index: HashMap<SessionKey, usize> = partitions
        .iter()
        .enumerate()
        .map(|(i, p)| (p.key.clone(), i))
        .collect();
    for (key, params) in request {
        match index.get(&key) {
            Some(&i) => partitions[i].params = params,
            None => {
                index.insert(key.clone(), partitions.len());
                partitions.push(CachedPartition {
                    key,
                    params,
                    sent: None,
                });
            }
        }
    }
}

#[cfg(test)]
#[path = "fetch_session_tests.rs"]
mod tests;
