//! This node's broker in the cluster: it registers with the active
//! controller (its endpoints, rack and a fresh incarnation id), then
//! heartbeats every `broker.heartbeat.interval.ms` with the metadata offset
//! it applied. A new registration starts fenced; the first heartbeat that
//! shows the broker caught up unfences it. A heartbeat refused for a stale
//! epoch (the controller fenced and forgot it) registers again. At shutdown
//! the heartbeat asks for controlled shutdown, which moves leadership away
//! before the broker stops.

use std::rc::Rc;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::time::Duration;

use uuid::Uuid;

use super::Quorum;
use crate::cluster::control::{ControllerReply, ControllerRequest, HeartbeatReply, LifecycleError};

/// Wall-clock time (ms since the Unix epoch) of this node's last registration or heartbeat that the
/// active controller answered (any answer); 0 before the first. Written by
/// shard 0's heartbeat loop, read by any shard (Relaxed: a hint for the
/// controller id given to clients, see [`controller_answered_within`]).
static CONTROLLER_ANSWERED_MS: AtomicI64 = AtomicI64::new(0);

/// Takes the broker time and a window (ms); gives whether the active
/// controller answered this node's registration or heartbeat within the
/// window (the handlers use `broker.session.timeout.ms`): when it did not,
/// the quorum is out of reach and Metadata names this broker as the
/// controller rather than one that may be gone.
pub fn controller_answered_within(now_ms: i64, window_ms: i64) -> bool {
    now_ms - CONTROLLER_ANSWERED_MS.load(Relaxed) <= window_ms
}

fn note_controller_answer() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    CONTROLLER_ANSWERED_MS.store(now, Relaxed);
}

/// Starts the registration and heartbeat loop of this node's broker.
pub fn start(q: &Rc<Quorum>) {
    let me = Rc::downgrade(q);
    let incarnation = q.incarnation();
    crate::stall::spawn_local("broker heartbeat", async move {
        loop {
            let Some(q) = me.upgrade() else { break };
            let interval = q.settings.heartbeat_interval;
            let step = match q.broker_epoch.get() {
                None => register(&q, incarnation).await,
                Some(epoch) => heartbeat(&q, epoch).await,
            };
            drop(q);
            match step {
                Step::Again => glommio::timer::sleep(Duration::from_millis(200)).await,
                Step::Wait => glommio::timer::sleep(interval).await,
                Step::Stop => break,
            }
        }
    })
    .detach();
}

enum Step {
    Again,
    Wait,
    Stop,
}

async fn register(q: &Quorum, incarnation: Uuid) -> Step {
    let req = ControllerRequest::RegisterBroker {
        broker_id: q.settings.node_id,
        incarnation_id: incarnation,
        cluster_id: q.settings.cluster_id.clone(),
        endpoints: q.settings.endpoints.clone(),
        rack: q.settings.rack.clone(),
        previous_broker_epoch: q.settings.previous_broker_epoch,
    };
    let answer = q.submit(req).await;
    if answer.is_ok() {
        note_controller_answer();
    }
    match answer {
        Ok(a) => match a.reply {
            ControllerReply::RegisterBroker(Ok(epoch)) => {
                log::info!(
                    "broker {} registered with broker epoch {epoch}",
                    q.settings.node_id
                );
                q.broker_epoch.set(Some(epoch));
                Step::Again
            }
            ControllerReply::RegisterBroker(Err(
                e @ LifecycleError::InconsistentClusterId { .. },
            )) => {
                log::error!("broker {} cannot join: {e}", q.settings.node_id);
                Step::Stop
            }
            ControllerReply::RegisterBroker(Err(e)) => {
                log::info!(
                    "broker {}: registration refused, retrying: {e}",
                    q.settings.node_id
                );
                Step::Wait
            }
            other => {
                log::warn!("broker registration: unexpected answer {other:?}");
                Step::Wait
            }
        },
        Err(e) => {
            log::info!(
                "broker {}: registration not answered yet: {e}",
                q.settings.node_id
            );
            Step::Again
        }
    }
}

async fn heartbeat(q: &Quorum, epoch: i64) -> Step {
    let req = ControllerRequest::BrokerHeartbeat {
        broker_id: q.settings.node_id,
        broker_epoch: epoch,
        metadata_offset: q.applied_offset(),
        want_fence: false,
        want_shutdown: q.shutting_down.get(),
    };
    let answer = q.submit(req).await;
    if answer.is_ok() {
        note_controller_answer();
    }
    match answer {
        Ok(a) => match a.reply {
            ControllerReply::BrokerHeartbeat(Ok(HeartbeatReply {
                is_fenced,
                is_caught_up,
                ..
            })) => {
                if is_fenced && is_caught_up {
                    // Unfencing is decided on the next heartbeat.
                    return Step::Again;
                }
                if is_fenced {
                    return Step::Again;
                }
                Step::Wait
            }
            ControllerReply::BrokerHeartbeat(Err(e)) => {
                log::info!(
                    "broker {}: heartbeat refused ({e}); registering again",
                    q.settings.node_id
                );
                q.broker_epoch.set(None);
                Step::Again
            }
            other => {
                log::warn!("broker heartbeat: unexpected answer {other:?}");
                Step::Wait
            }
        },
        Err(e) => {
            log::debug!("broker {}: heartbeat not answered: {e}", q.settings.node_id);
            Step::Again
        }
    }
}

/// Controlled shutdown: asks the active controller to move this broker's
/// leaderships away and waits (up to `timeout`) until it has.
pub async fn controlled_shutdown(q: &Quorum, timeout: Duration) {
    q.shutting_down.set(true);
    let Some(epoch) = q.broker_epoch.get() else {
        return;
    };
    let req = ControllerRequest::BrokerHeartbeat {
        broker_id: q.settings.node_id,
        broker_epoch: epoch,
        metadata_offset: q.applied_offset(),
        want_fence: false,
        want_shutdown: true,
    };
    let done = futures_lite::future::or(async { q.submit(req).await.ok() }, async {
        glommio::timer::sleep(timeout).await;
        None
    })
    .await;
    match done {
        Some(_) => log::info!("broker {}: controlled shutdown done", q.settings.node_id),
        None => log::warn!(
            "broker {}: controlled shutdown not confirmed in time",
            q.settings.node_id
        ),
    }
}

/// Adopts the topics waiting in the legacy registry (`__cluster_metadata/`:
/// a data directory of an earlier version, or `fjord import-logs`) into the
/// metadata log, once this broker is registered and alive: each keeps its
/// topic id, configs and partition count, with this broker as the only
/// replica; the file goes once the topic is in the log. The producer id
/// block file of an earlier version becomes a reservation; a new cluster's
/// feature levels are finalized first. Gives how many
/// topics were adopted.
pub async fn adopt_inbox(q: &Quorum, data_dir: &std::path::Path) -> usize {
    use crate::cluster::control::NewTopic;
    use crate::cluster::controller::{load_topics, remove_topic_file, METADATA_DIR};
    use crate::cluster::metadata::MetadataImage;
    let inbox = match load_topics(data_dir, MetadataImage::empty(String::new())) {
        Ok(img) => img,
        Err(e) => {
            log::error!("cannot read {}: {e}", data_dir.join(METADATA_DIR).display());
            return 0;
        }
    };
    // The finalized feature levels of a new cluster (`fjord format`'s file,
    // else the defaults); the controller writes them only while the log has
    // none, so a cluster keeps its levels.
    match crate::cluster::features::read(data_dir) {
        Ok(levels) => match q.submit(ControllerRequest::BootstrapFeatures(levels)).await {
            Ok(a) => log::debug!("bootstrap feature levels: {:?}", a.reply),
            Err(e) => log::warn!("cannot write the bootstrap feature levels: {e}"),
        },
        Err(e) => log::error!(
            "cannot read {}: {e}",
            data_dir
                .join(METADATA_DIR)
                .join(crate::cluster::features::FILE)
                .display()
        ),
    }
    let bootstrap = q.settings.bootstrap_scram.clone();
    if !bootstrap.is_empty() {
        let n = bootstrap.len();
        let req = ControllerRequest::BootstrapScram {
            credentials: bootstrap,
        };
        match q.submit(req).await {
            Ok(a) => log::info!(
                "bootstrap SCRAM credentials: {n} in {}, {:?} written to the metadata log",
                crate::cluster::bootstrap_scram::FILE,
                a.reply
            ),
            Err(e) => log::warn!("cannot write the bootstrap SCRAM credentials: {e}"),
        }
    }
    if let Some(next) = crate::cluster::producer_ids::reserved(&data_dir.join(METADATA_DIR)) {
        let req = ControllerRequest::ReserveProducerIds {
            next_producer_id: next,
        };
        if let Err(e) = q.submit(req).await {
            log::warn!("cannot reserve producer ids below {next}: {e}");
        }
    }
    let node = q.settings.node_id;
    let mut adopted = 0;
    for t in inbox.topics.values() {
        let image = q.image();
        if image.topic_by_id(&t.id).is_some_and(|x| x.name == t.name) {
            let _ = remove_topic_file(data_dir, &t.name);
            continue;
        }
        let req = ControllerRequest::CreateTopics {
            topics: vec![NewTopic {
                name: t.name.to_string(),
                partitions: t.partitions,
                replication_factor: 1,
                assignments: Some(vec![vec![node]; t.partitions.max(0) as usize]),
                configs: t.configs.clone(),
                topic_id: Some(t.id),
            }],
            validate_only: false,
        };
        match q.submit(req).await.map(|a| a.reply) {
            Ok(ControllerReply::CreateTopics(r)) => match r.into_iter().next() {
                Some(Ok(_)) => {
                    log::info!(
                        "adopted topic {} ({} partitions) into the metadata log",
                        t.name,
                        t.partitions
                    );
                    adopted += 1;
                    if let Err(e) = remove_topic_file(data_dir, &t.name) {
                        log::warn!("cannot remove the registry file of {}: {e}", t.name);
                    }
                }
                Some(Err(e)) => {
                    log::error!("cannot adopt topic {} into the metadata log: {e}", t.name)
                }
                None => log::error!("cannot adopt topic {}: no answer", t.name),
            },
            Ok(other) => log::error!("adopting {}: unexpected answer {other:?}", t.name),
            Err(e) => log::error!("cannot adopt topic {}: {e}", t.name),
        }
    }
    adopted
}
