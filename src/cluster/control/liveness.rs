//! Broker liveness at the active controller: the heartbeat clocks
//! ([`Liveness`]) and the fencing of brokers whose session expired
//! (`broker.session.timeout.ms`), with the elections that follow.

use super::*;

/// The controller's in-memory view of broker liveness (not replicated: a
/// new active controller starts every broker's clock afresh).
#[derive(Debug, Default)]
pub struct Liveness {
    last_heartbeat: BTreeMap<i32, Instant>,
    /// Brokers that heartbeated this controller since it became active (a
    /// fresh session given by [`Liveness::reset`] is not proof of life).
    heard: std::collections::BTreeSet<i32>,
}

impl Liveness {
    /// Gives every registered broker a fresh session (a controller that just
    /// became active).
    pub fn reset(&mut self, image: &MetadataImage, now: Instant) {
        self.last_heartbeat = image.registrations.keys().map(|id| (*id, now)).collect();
        self.heard.clear();
    }

    /// Records a heartbeat of `broker`.
    pub fn beat(&mut self, broker: i32, now: Instant) {
        self.last_heartbeat.insert(broker, now);
        self.heard.insert(broker);
    }

    /// Whether `broker` heartbeated this controller within `session`.
    pub fn heard_within(&self, broker: i32, now: Instant, session: Duration) -> bool {
        self.heard.contains(&broker) && self.is_live(broker, now, session)
    }

    /// Whether `broker` heartbeated within `session`.
    pub fn is_live(&self, broker: i32, now: Instant, session: Duration) -> bool {
        self.last_heartbeat
            .get(&broker)
            .is_some_and(|t| now.saturating_duration_since(*t) <= session)
    }
}

/// The records fencing every unfenced broker whose session expired at
/// `now`, with the leader elections that follow.
pub fn expire_sessions(
    image: &MetadataImage,
    liveness: &Liveness,
    now: Instant,
    rules: &Rules,
) -> Vec<MetadataRecord> {
    let mut records = Vec::new();
    let mut after = image.clone();
    for b in image.registrations.values() {
        if b.fenced || liveness.is_live(b.node_id, now, rules.session_timeout) {
            continue;
        }
        log::info!(
            "broker {} missed its heartbeats for {} ms (broker.session.timeout.ms): fencing it",
            b.node_id,
            rules.session_timeout.as_millis()
        );
        let fence = MetadataRecord::FenceBroker {
            broker_id: b.node_id,
            epoch: b.epoch,
        };
        after = after.apply(after.offset, std::slice::from_ref(&fence));
        let moves = election::on_broker_gone(&after, &rules.election, b.node_id);
        after = after.apply(after.offset, &moves);
        records.push(fence);
        records.extend(moves);
    }
    records
}
