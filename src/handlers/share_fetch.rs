//! ShareFetch (key 78) and ShareAcknowledge (key 79), v1 (KIP-932).
//!
//! Served while `share.version` >= 1 (UNSUPPORTED_VERSION otherwise, as
//! Kafka 4.4 answers with the feature at 0). A request names its share
//! session by (group id, member id) and epoch; the session lives in the
//! cache of the shard that (group id, member id) hashes to, so a member
//! may use it from any connection, as Kafka's broker-wide cache allows
//! (`shard::Shard::share_sessions`, `share::session`). Its partitions are
//! then served on the shards that lead them, one cross-shard call per
//! owner (`shard::owner::share`): acknowledgements, a release when the
//! session closes (epoch -1), and for a ShareFetch the acquisition of
//! records read from the log. A ShareFetch that acquired nothing waits for
//! an append or a release until `MaxWaitMs`, as Fetch long-polls.
//!
//! Authorization as Kafka's `KafkaApis`: READ on the group
//! (GROUP_AUTHORIZATION_FAILED for the whole request), READ on each topic
//! (TOPIC_AUTHORIZATION_FAILED for its partitions). A topic id that names
//! no topic is UNKNOWN_TOPIC_ID, a partition beyond the topic's
//! UNKNOWN_TOPIC_OR_PARTITION, a partition led elsewhere
//! NOT_LEADER_OR_FOLLOWER with its current leader. The membership of the
//! member is not checked yet (ShareGroupHeartbeat is not served): see
//! docs/decisions/share-groups.md.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{
    share_acknowledge_response, share_fetch_response, ShareAcknowledgeRequest,
    ShareAcknowledgeResponse, ShareFetchRequest, ShareFetchResponse,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType};
use crate::cluster::features::SHARE_VERSION;
use crate::cluster::leadership;
use crate::cluster::metadata::BrokerMeta;
use crate::error::{codes, KafkaCode};
use crate::group::share_group_coordinator::share_partition_settings;
use crate::protocol::RequestFrame;
use crate::shard::owner::share::{self as owner_share, AckBatch, ShareRead, ShareWait};
use crate::shard::Shard;
use crate::share::config::GroupShareSettings;
use crate::share::partition::AcquiredRange;
use crate::share::session::{SessionBegun, SharePartitionKey, ShareRequestKind};

/// Whether share groups are enabled: `share.version` finalized at 1 or more.
fn enabled(shard: &Shard) -> bool {
    shard
        .metadata()
        .finalized_features
        .get(SHARE_VERSION)
        .is_some_and(|l| *l >= 1)
}

/// The shard whose cache holds the share session of (`group`, `member`).
fn session_shard(shard: &Shard, group: &str, member: &str) -> usize {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (group, member).hash(&mut h);
    (h.finish() % shard.shards.max(1) as u64) as usize
}

/// The key of the connection `frame` came on: its listener and peer
/// address (unique among the broker's open connections).
fn connection_key(listener: &str, peer: std::net::SocketAddr) -> String {
    format!("{listener}/{peer}")
}

/// Opens, checks or closes the session on its shard; the request's
/// top-level error code when refused. A session opened here is remembered
/// with the connection, whose close closes it ([`connection_closed`]).
#[allow(clippy::too_many_arguments)]
async fn begin_session(
    shard: &Rc<Shard>,
    frame: &RequestFrame,
    group: &Arc<str>,
    member: &Arc<str>,
    epoch: i32,
    kind: ShareRequestKind,
    wanted: Vec<SharePartitionKey>,
    forgotten: Vec<SharePartitionKey>,
) -> Result<SessionBegun, i16> {
    let (g, m) = (group.to_string(), member.to_string());
    let home = session_shard(shard, group, member);
    let connection = frame
        .peer
        .map(|p| connection_key(frame.listener().unwrap_or(""), p));
    let conn = connection.clone();
    match shard
        .invoke_on(home, move |s| async move {
            s.share_sessions.borrow_mut().begin(
                &g,
                &m,
                epoch,
                kind,
                &wanted,
                &forgotten,
                conn.as_deref(),
            )
        })
        .await
    {
        Ok(Ok(b)) => {
            if let (true, Some(c)) = (b.full, connection) {
                let mut opened = shard.share_connections.borrow_mut();
                let list = opened.entry(c).or_default();
                if !list.iter().any(|(g, m)| g == group && m == member) {
                    list.push((group.clone(), member.clone()));
                }
            }
            Ok(b)
        }
        Ok(Err(e)) => {
            log::debug!("share session: {e}");
            Err(e.code())
        }
        Err(e) => Err(e.code()),
    }
}

/// One partition of a request, resolved.
struct Slot {
    key: SharePartitionKey,
    topic: Option<Arc<str>>,
    owner: usize,
    /// Refused before any read (authorization, unknown topic or partition).
    error_code: i16,
    acks: Vec<AckBatch>,
}

/// A partition's answer.
#[derive(Default)]
struct Answer {
    error_code: i16,
    ack_error_code: Option<i16>,
    records: Bytes,
    acquired: Vec<AcquiredRange>,
}

/// Resolves the session's partitions against the image and the ACLs.
fn resolve(
    shard: &Shard,
    access: &Access,
    partitions: &[SharePartitionKey],
    mut acks: HashMap<SharePartitionKey, Vec<AckBatch>>,
) -> Vec<Slot> {
    let image = shard.metadata();
    let mut refused: HashMap<Uuid, bool> = HashMap::new();
    partitions
        .iter()
        .map(|key| {
            let meta = image.topic_by_id(&key.0);
            let denied = meta.is_some_and(|m| {
                *refused.entry(key.0).or_insert_with(|| {
                    !access.allows(Operation::Read, ResourceType::Topic, &m.name)
                })
            });
            let error_code = match meta {
                None => codes::UNKNOWN_TOPIC_ID,
                Some(_) if denied => codes::TOPIC_AUTHORIZATION_FAILED,
                Some(m) if !(0..m.partitions).contains(&key.1) => codes::UNKNOWN_TOPIC_OR_PARTITION,
                Some(_) => codes::NONE,
            };
            let topic = meta.map(|m| m.name.clone());
            Slot {
                key: *key,
                owner: topic.as_ref().map_or(0, |t| shard.owner(t, key.1)),
                topic,
                error_code,
                acks: acks.remove(key).unwrap_or_default(),
            }
        })
        .collect()
}

/// What one round asks of the partitions' owners.
struct Round<'a> {
    group: &'a Arc<str>,
    member: &'a Arc<str>,
    with_acks: bool,
    release_member: bool,
    fetch: bool,
    max_bytes: u64,
    max_records: usize,
    /// The group's share-partition settings, read once per request.
    settings: &'a GroupShareSettings,
    /// The request opened its share session (epoch 0): the owners check
    /// the windows they hold against the persisted state first.
    opened: bool,
}

/// Runs one round on every owner (concurrently); gives the answers in
/// slot order and what a long poll would wait on.
async fn round(shard: &Rc<Shard>, slots: &[Slot], r: &Round<'_>) -> (Vec<Answer>, Vec<ShareWait>) {
    let mut answers: Vec<Answer> = slots
        .iter()
        .map(|s| Answer {
            error_code: s.error_code,
            ..Answer::default()
        })
        .collect();
    let mut by_owner: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, s) in slots.iter().enumerate() {
        if s.error_code == codes::NONE {
            by_owner.entry(s.owner).or_default().push(i);
        }
    }
    let mut tasks = Vec::new();
    for (owner, idx) in by_owner {
        let reads: Vec<ShareRead> = idx
            .iter()
            .filter_map(|&i| {
                let s = &slots[i];
                Some(ShareRead {
                    group: r.group.clone(),
                    member: r.member.clone(),
                    topic: s.topic.clone()?,
                    topic_id: s.key.0,
                    partition: s.key.1,
                    acks: if r.with_acks {
                        s.acks.clone()
                    } else {
                        Vec::new()
                    },
                    release_member: r.release_member,
                    fetch: r.fetch,
                    max_bytes: r.max_bytes,
                    max_records: r.max_records,
                    settings: r.settings.clone(),
                    revalidate: r.opened,
                })
            })
            .collect();
        let me = shard.clone();
        let task = crate::shard::stall::spawn_local("share fan-out", async move {
            owner_share::share_on(&me, owner, reads).await
        });
        tasks.push((owner, idx, task));
    }
    let mut waits = Vec::new();
    for (owner, idx, task) in tasks {
        let mut wait = ShareWait {
            owner,
            partitions: Vec::new(),
            released_generation: 0,
        };
        match task.await {
            Ok(rs) => {
                for (i, got) in idx.into_iter().zip(rs) {
                    let a = &mut answers[i];
                    a.error_code = got.error.as_ref().map_or(codes::NONE, |e| e.code());
                    if r.with_acks && !slots[i].acks.is_empty() {
                        a.ack_error_code =
                            Some(got.ack_error.as_ref().map_or(codes::NONE, |e| e.code()));
                    }
                    a.records = got.records;
                    a.acquired = got.acquired;
                    wait.released_generation = got.released_generation;
                    if let Some(t) = &slots[i].topic {
                        wait.partitions
                            .push((t.clone(), slots[i].key.1, got.append_generation));
                    }
                }
            }
            Err(e) => {
                for i in idx {
                    answers[i].error_code = e.code();
                }
            }
        }
        waits.push(wait);
    }
    (answers, waits)
}

/// The (topic id, partition) → acknowledgement batches of a ShareFetch.
fn fetch_acks(req: &ShareFetchRequest) -> HashMap<SharePartitionKey, Vec<AckBatch>> {
    let mut out: HashMap<SharePartitionKey, Vec<AckBatch>> = HashMap::new();
    for t in &req.topics {
        for p in &t.partitions {
            let batches = p.acknowledgement_batches.iter().map(|b| AckBatch {
                first: b.first_offset,
                last: b.last_offset,
                types: b.acknowledge_types.clone(),
            });
            out.entry((t.topic_id, p.partition_index))
                .or_default()
                .extend(batches);
        }
    }
    out
}

/// Group and member ids of a request, or its top-level error code in
/// Kafka's order: UNSUPPORTED_VERSION while `share.version` < 1,
/// INVALID_REQUEST without them, GROUP_AUTHORIZATION_FAILED without READ
/// on the group.
fn identify(
    shard: &Shard,
    access: &Access,
    group: Option<&str>,
    member: Option<&str>,
) -> Result<(Arc<str>, Arc<str>), i16> {
    if !enabled(shard) {
        return Err(codes::UNSUPPORTED_VERSION);
    }
    let (Some(group), Some(member)) = (group, member) else {
        return Err(codes::INVALID_REQUEST);
    };
    if group.is_empty() || member.is_empty() {
        return Err(codes::INVALID_REQUEST);
    }
    if !access.allows(Operation::Read, ResourceType::Group, group) {
        return Err(codes::GROUP_AUTHORIZATION_FAILED);
    }
    Ok((Arc::from(group), Arc::from(member)))
}

/// The current leader of each answered partition, and the endpoints of
/// those of refused ones (NOT_LEADER_OR_FOLLOWER).
fn leaders(
    shard: &Shard,
    frame: &RequestFrame,
    slots: &[Slot],
    answers: &[Answer],
) -> (Vec<(i32, i32)>, Vec<BrokerMeta>) {
    let image = shard.metadata();
    let mut endpoints = BTreeMap::new();
    let out = slots
        .iter()
        .zip(answers)
        .map(|(s, a)| match &s.topic {
            Some(t) => {
                let l = leadership::current_leader(&image, t, s.key.1, frame.listener());
                if a.error_code == codes::NOT_LEADER_OR_FOLLOWER {
                    if let Some(node) = l.node {
                        endpoints.insert(node.node_id, node);
                    }
                }
                (l.leader_id, l.leader_epoch)
            }
            None => (-1, -1),
        })
        .collect();
    (out, endpoints.into_values().collect())
}

/// Answers a ShareFetch request.
pub async fn handle_fetch(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ShareFetchRequest = frame.decode()?;
    let refuse = |code: i16| {
        let mut r = ShareFetchResponse::default();
        r.error_code = code;
        respond(frame, &r)
    };
    let access = Access::of(shard, frame);
    let (group, member) = match identify(
        shard,
        &access,
        req.group_id.as_ref().map(|g| g.0.as_str()),
        req.member_id.as_ref().map(|m| m.as_str()),
    ) {
        Ok(ids) => ids,
        Err(code) => return Ok(refuse(code)),
    };
    let wanted: Vec<SharePartitionKey> = req
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.topic_id, p.partition_index)))
        .collect();
    let forgotten: Vec<SharePartitionKey> = req
        .forgotten_topics_data
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.topic_id, *p)))
        .collect();
    let begun = match begin_session(
        shard,
        frame,
        &group,
        &member,
        req.share_session_epoch,
        ShareRequestKind::Fetch,
        wanted,
        forgotten,
    )
    .await
    {
        Ok(b) => b,
        Err(code) => return Ok(refuse(code)),
    };
    let slots = resolve(shard, &access, &begun.partitions, fetch_acks(&req));
    // `MaxBytes` shared evenly by the partitions read (Kafka's uniform
    // `PartitionMaxBytesStrategy`); each still returns its first batch.
    let max_bytes = if req.max_bytes <= 0 {
        i32::MAX as u64
    } else {
        req.max_bytes as u64
    };
    let readable = slots.iter().filter(|s| s.error_code == codes::NONE).count();
    let max_bytes = (max_bytes / readable.max(1) as u64).max(1);
    let max_records = if req.max_records <= 0 {
        usize::MAX
    } else {
        req.max_records as usize
    };
    let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
    let settings = share_partition_settings(shard, &group);
    let mut r = Round {
        group: &group,
        member: &member,
        with_acks: true,
        release_member: begun.closed,
        fetch: !begun.closed,
        max_bytes,
        max_records,
        settings: &settings,
        opened: req.share_session_epoch == 0,
    };
    let (mut answers, mut waits) = round(shard, &slots, &r).await;
    let ack_codes: Vec<Option<i16>> = answers.iter().map(|a| a.ack_error_code).collect();
    r.with_acks = false;
    r.release_member = false;
    r.opened = false;
    // A close only acknowledges and releases; a fetch long-polls.
    loop {
        let got = answers
            .iter()
            .any(|a| !a.acquired.is_empty() || a.error_code != codes::NONE);
        let remaining = deadline.saturating_duration_since(Instant::now());
        if begun.closed || got || remaining.is_zero() || slots.is_empty() || req.min_bytes <= 0 {
            break;
        }
        owner_share::wait_for_records(shard, waits, remaining).await;
        (answers, waits) = round(shard, &slots, &r).await;
    }
    for (a, code) in answers.iter_mut().zip(ack_codes) {
        a.ack_error_code = code;
    }

    let (current, endpoints) = leaders(shard, frame, &slots, &answers);
    let mut topics: Vec<share_fetch_response::ShareFetchableTopicResponse> = Vec::new();
    for ((s, a), (leader_id, leader_epoch)) in slots.iter().zip(answers).zip(current) {
        // A session's later request answers only the partitions with
        // something to say (records, an error, an acknowledgement).
        let carried = begun.full
            || a.error_code != codes::NONE
            || a.ack_error_code.is_some()
            || !a.acquired.is_empty();
        if !carried {
            continue;
        }
        let mut p = share_fetch_response::PartitionData::default();
        p.partition_index = s.key.1;
        p.error_code = a.error_code;
        p.acknowledge_error_code = a.ack_error_code.unwrap_or(codes::NONE);
        p.current_leader.leader_id = leader_id;
        p.current_leader.leader_epoch = leader_epoch;
        p.records = Some(a.records);
        p.acquired_records = a
            .acquired
            .iter()
            .map(|x| {
                let mut r = share_fetch_response::AcquiredRecords::default();
                r.first_offset = x.first;
                r.last_offset = x.last;
                r.delivery_count = x.delivery_count;
                r
            })
            .collect();
        match topics.iter_mut().find(|t| t.topic_id == s.key.0) {
            Some(t) => t.partitions.push(p),
            None => {
                let mut t = share_fetch_response::ShareFetchableTopicResponse::default();
                t.topic_id = s.key.0;
                t.partitions.push(p);
                topics.push(t);
            }
        }
    }
    let mut resp = ShareFetchResponse::default();
    // The group's `share.record.lock.duration.ms` in force (KIP-932).
    resp.acquisition_lock_timeout_ms =
        i32::try_from(settings.window.lock_duration_ms).unwrap_or(i32::MAX);
    resp.responses = topics;
    resp.node_endpoints = endpoints
        .into_iter()
        .map(|b| {
            let mut e = share_fetch_response::NodeEndpoint::default();
            e.node_id = b.node_id.into();
            e.host = StrBytes::from_string(b.host);
            e.port = b.port;
            e.rack = b.rack.map(StrBytes::from_string);
            e
        })
        .collect();
    Ok(respond(frame, &resp))
}

/// Answers a ShareAcknowledge request.
pub async fn handle_acknowledge(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: ShareAcknowledgeRequest = frame.decode()?;
    let refuse = |code: i16| {
        let mut r = ShareAcknowledgeResponse::default();
        r.error_code = code;
        respond(frame, &r)
    };
    let access = Access::of(shard, frame);
    let (group, member) = match identify(
        shard,
        &access,
        req.group_id.as_ref().map(|g| g.0.as_str()),
        req.member_id.as_ref().map(|m| m.as_str()),
    ) {
        Ok(ids) => ids,
        Err(code) => return Ok(refuse(code)),
    };
    let mut acks: HashMap<SharePartitionKey, Vec<AckBatch>> = HashMap::new();
    let mut named: Vec<SharePartitionKey> = Vec::new();
    for t in &req.topics {
        for p in &t.partitions {
            let key = (t.topic_id, p.partition_index);
            if !named.contains(&key) {
                named.push(key);
            }
            acks.entry(key)
                .or_default()
                .extend(p.acknowledgement_batches.iter().map(|b| AckBatch {
                    first: b.first_offset,
                    last: b.last_offset,
                    types: b.acknowledge_types.clone(),
                }));
        }
    }
    let begun = match begin_session(
        shard,
        frame,
        &group,
        &member,
        req.share_session_epoch,
        ShareRequestKind::Acknowledge,
        Vec::new(),
        Vec::new(),
    )
    .await
    {
        Ok(b) => b,
        Err(code) => return Ok(refuse(code)),
    };
    // The acknowledged partitions are answered; a close also releases the
    // member's records in every partition of its session.
    let mut serve = named.clone();
    if begun.closed {
        for k in &begun.partitions {
            if !serve.contains(k) {
                serve.push(*k);
            }
        }
    }
    let slots = resolve(shard, &access, &serve, acks);
    let r = Round {
        group: &group,
        member: &member,
        with_acks: true,
        release_member: begun.closed,
        fetch: false,
        max_bytes: 0,
        max_records: 0,
        settings: &share_partition_settings(shard, &group),
        opened: false,
    };
    let (answers, _) = round(shard, &slots, &r).await;
    let (current, endpoints) = leaders(shard, frame, &slots, &answers);
    let mut topics: Vec<share_acknowledge_response::ShareAcknowledgeTopicResponse> = Vec::new();
    for ((s, a), (leader_id, leader_epoch)) in slots.iter().zip(answers).zip(current) {
        if !named.contains(&s.key) {
            continue;
        }
        let mut p = share_acknowledge_response::PartitionData::default();
        p.partition_index = s.key.1;
        p.error_code = match a.error_code {
            codes::NONE => a.ack_error_code.unwrap_or(codes::NONE),
            e => e,
        };
        p.current_leader.leader_id = leader_id;
        p.current_leader.leader_epoch = leader_epoch;
        match topics.iter_mut().find(|t| t.topic_id == s.key.0) {
            Some(t) => t.partitions.push(p),
            None => {
                let mut t = share_acknowledge_response::ShareAcknowledgeTopicResponse::default();
                t.topic_id = s.key.0;
                t.partitions.push(p);
                topics.push(t);
            }
        }
    }
    let mut resp = ShareAcknowledgeResponse::default();
    resp.responses = topics;
    resp.node_endpoints = endpoints
        .into_iter()
        .map(|b| {
            let mut e = share_acknowledge_response::NodeEndpoint::default();
            e.node_id = b.node_id.into();
            e.host = StrBytes::from_string(b.host);
            e.port = b.port;
            e.rack = b.rack.map(StrBytes::from_string);
            e
        })
        .collect();
    Ok(respond(frame, &resp))
}

/// A connection on `listener` from `peer` closed: the share sessions it
/// opened (and that no other connection reopened since) close, and the
/// records their members hold in the sessions' partitions are released,
/// as Kafka 4.4 does when a share consumer's connection goes away.
pub async fn connection_closed(shard: &Rc<Shard>, listener: &str, peer: std::net::SocketAddr) {
    let key = connection_key(listener, peer);
    let Some(opened) = shard.share_connections.borrow_mut().remove(&key) else {
        return;
    };
    for (group, member) in opened {
        let home = session_shard(shard, &group, &member);
        let (g, m, c) = (group.to_string(), member.to_string(), key.clone());
        let closed = shard
            .invoke_on(home, move |s| async move {
                s.share_sessions.borrow_mut().connection_closed(&g, &m, &c)
            })
            .await;
        let Ok(Some(partitions)) = closed else {
            continue;
        };
        let image = shard.metadata();
        let settings = share_partition_settings(shard, &group);
        let mut by_owner: BTreeMap<usize, Vec<ShareRead>> = BTreeMap::new();
        for (topic_id, partition) in partitions {
            let Some(meta) = image.topic_by_id(&topic_id) else {
                continue;
            };
            by_owner
                .entry(shard.owner(&meta.name, partition))
                .or_default()
                .push(ShareRead {
                    group: group.clone(),
                    member: member.clone(),
                    topic: meta.name.clone(),
                    topic_id,
                    partition,
                    acks: Vec::new(),
                    release_member: true,
                    fetch: false,
                    max_bytes: 0,
                    max_records: 0,
                    settings: settings.clone(),
                    revalidate: false,
                });
        }
        for (owner, reads) in by_owner {
            if let Err(e) = owner_share::share_on(shard, owner, reads).await {
                log::debug!("share session of {member} in {group}: release on shard {owner}: {e}");
            }
        }
    }
}
