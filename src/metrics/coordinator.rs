//! The group coordinator's metrics under the names the Prometheus JMX
//! exporter gives Kafka 4's `group-coordinator-metrics`
//! (`kafka.server:type=group-coordinator-metrics`, Kafka's
//! `GroupCoordinatorMetrics`): groups by protocol
//! (`..._group_count{protocol}`), consumer (KIP-848) and share (KIP-932)
//! groups by state, classic groups by state, the committed offsets, and the
//! rebalance and offset-commit counters.
//!
//! The counts by state live in the group coordinator and are copied by
//! each shard's `metrics sync` task into [`GroupStates`] (about once a
//! second); the counters ([`CoordinatorCounters`]) are single-writer
//! `Relaxed` atomics each shard adds to as the events happen.

use std::collections::BTreeMap;
use std::fmt::Error;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use prometheus_client::encoding::DescriptorEncoder;

use super::collect::{counters, gauges, Labels};
use super::shard::Snapshot;
use crate::stall::ShardStallStats;

/// The JMX exporter's prefix of Kafka's `group-coordinator-metrics`.
const PREFIX: &str = "kafka_server_group_coordinator_metrics";

/// Kafka's consumer group states (`ConsumerGroupState`'s names, the
/// `state` tag of `consumer-group-count`).
pub const CONSUMER_STATES: [&str; 5] = ["Empty", "Assigning", "Reconciling", "Stable", "Dead"];

/// Kafka's share group states (the `state` tag of `share-group-count`).
pub const SHARE_STATES: [&str; 3] = ["Empty", "Stable", "Dead"];

/// Kafka's classic group states (the `state` tag of
/// `classic-group-count`).
pub const CLASSIC_STATES: [&str; 5] = [
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Empty",
];

/// One shard's group coordinator counters (counts since start).
#[derive(Debug, Default)]
pub struct CoordinatorCounters {
    /// Classic groups' completed join phases: a new generation with
    /// members (`group-completed-rebalance-count`).
    pub classic_rebalances: AtomicU64,
    /// Consumer groups' (KIP-848) group epoch bumps
    /// (`consumer-group-rebalance-count`).
    pub consumer_rebalances: AtomicU64,
    /// Share groups' group epoch bumps (`share-group-rebalance-count`).
    pub share_rebalances: AtomicU64,
    /// Offsets committed, one per partition, by OffsetCommit and
    /// TxnOffsetCommit once appended (`offset-commit-count`).
    pub offset_commits: AtomicU64,
}

/// The consumer and share groups one shard coordinates, counted by state
/// (Kafka's state names), as of the last refresh.
#[derive(Debug, Clone, Default)]
pub struct GroupStates {
    /// Consumer groups (KIP-848) by state.
    pub consumer: BTreeMap<&'static str, u64>,
    /// Share groups (KIP-932) by state.
    pub share: BTreeMap<&'static str, u64>,
}

/// Which coordinator counter an event adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A classic group completed a join phase with members.
    ClassicRebalance,
    /// A consumer group bumped its group epoch.
    ConsumerRebalance,
    /// A share group bumped its group epoch.
    ShareRebalance,
}

/// Counts one `event` on this shard (nothing on a thread without shard
/// metrics, e.g. a unit test's).
pub fn count(event: Event) {
    let Some(m) = super::shard::here() else {
        return;
    };
    let c = &m.coordinator;
    match event {
        Event::ClassicRebalance => &c.classic_rebalances,
        Event::ConsumerRebalance => &c.consumer_rebalances,
        Event::ShareRebalance => &c.share_rebalances,
    }
    .fetch_add(1, Relaxed);
}

/// Counts `n` offsets committed on this shard (one per partition).
pub fn count_offset_commits(n: usize) {
    if n == 0 {
        return;
    }
    if let Some(m) = super::shard::here() {
        m.coordinator.offset_commits.fetch_add(n as u64, Relaxed);
    }
}

/// One gauge series without labels.
fn one(v: u64) -> Vec<(Labels, i64)> {
    vec![(Vec::new(), i64::try_from(v).unwrap_or(i64::MAX))]
}

/// Encodes the `kafka_server_group_coordinator_metrics_*` families from
/// every shard's counters (`stats`) and refreshed figures (`snaps`).
pub fn encode(
    enc: &mut DescriptorEncoder<'_>,
    stats: &[ShardStallStats],
    snaps: &[Snapshot],
) -> Result<(), Error> {
    let mut classic: BTreeMap<&str, u64> = BTreeMap::new();
    for (state, _, n) in snaps.iter().flat_map(|s| s.groups.iter()) {
        *classic.entry(*state).or_default() += n;
    }
    let mut consumer: BTreeMap<&str, u64> = BTreeMap::new();
    let mut share: BTreeMap<&str, u64> = BTreeMap::new();
    for s in snaps {
        for (state, n) in &s.coordinator.consumer {
            *consumer.entry(*state).or_default() += n;
        }
        for (state, n) in &s.coordinator.share {
            *share.entry(*state).or_default() += n;
        }
    }
    let total = |m: &BTreeMap<&str, u64>| m.values().sum::<u64>();
    let by_protocol: Vec<(Labels, i64)> = [
        ("classic", total(&classic)),
        ("consumer", total(&consumer)),
        ("share", total(&share)),
    ]
    .into_iter()
    .map(|(p, n)| {
        (
            vec![("protocol", p.to_string())],
            i64::try_from(n).unwrap_or(i64::MAX),
        )
    })
    .collect();
    gauges(
        enc,
        &format!("{PREFIX}_group_count"),
        "Groups this broker coordinates, by protocol (classic, consumer, share).",
        &by_protocol,
    )?;
    let by_state = |states: &[&'static str], m: &BTreeMap<&str, u64>| -> Vec<(Labels, i64)> {
        states
            .iter()
            .map(|s| {
                let n = m.get(s).copied().unwrap_or(0);
                (
                    vec![("state", (*s).to_string())],
                    i64::try_from(n).unwrap_or(i64::MAX),
                )
            })
            .collect()
    };
    gauges(
        enc,
        &format!("{PREFIX}_classic_group_count"),
        "Classic groups this broker coordinates, by state.",
        &by_state(&CLASSIC_STATES, &classic),
    )?;
    gauges(
        enc,
        &format!("{PREFIX}_consumer_group_count"),
        "Consumer groups (KIP-848) this broker coordinates, by state.",
        &by_state(&CONSUMER_STATES, &consumer),
    )?;
    gauges(
        enc,
        &format!("{PREFIX}_share_group_count"),
        "Share groups (KIP-932) this broker coordinates, by state.",
        &by_state(&SHARE_STATES, &share),
    )?;
    let offsets = snaps.iter().map(|s| s.committed.len() as u64).sum();
    gauges(
        enc,
        &format!("{PREFIX}_offset_count"),
        "Committed offsets of the groups this broker coordinates.",
        &one(offsets),
    )?;
    let sum = |f: fn(&CoordinatorCounters) -> &AtomicU64| -> Vec<(Labels, u64)> {
        let n = stats
            .iter()
            .map(|s| f(&s.broker.coordinator).load(Relaxed))
            .sum();
        vec![(Vec::new(), n)]
    };
    counters(
        enc,
        &format!("{PREFIX}_group_completed_rebalance_count"),
        "Classic groups' completed rebalances (join phases that gave a new generation with members).",
        &sum(|c| &c.classic_rebalances),
    )?;
    counters(
        enc,
        &format!("{PREFIX}_consumer_group_rebalance_count"),
        "Consumer groups' (KIP-848) rebalances: group epoch bumps.",
        &sum(|c| &c.consumer_rebalances),
    )?;
    counters(
        enc,
        &format!("{PREFIX}_share_group_rebalance_count"),
        "Share groups' rebalances: group epoch bumps.",
        &sum(|c| &c.share_rebalances),
    )?;
    counters(
        enc,
        &format!("{PREFIX}_offset_commit_count"),
        "Offsets committed (one per partition) by OffsetCommit and TxnOffsetCommit.",
        &sum(|c| &c.offset_commits),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{parse, render};
    use crate::stall::registry;

    #[test]
    fn counts_by_protocol_and_state_summed_over_shards() {
        let stats = registry(2);
        for (i, stable) in [(0usize, 1u64), (1, 2)] {
            let mut s = Snapshot::default();
            s.coordinator.consumer.insert("Stable", stable);
            s.coordinator.share.insert("Empty", 1);
            s.groups.push(("Empty", "consumer".into(), 1));
            stats[i].broker.set_snapshot(s);
            super::super::shard::install(stats[i].broker.clone());
            count(Event::ConsumerRebalance);
            count_offset_commits(3);
        }
        let samples = parse(&render(&stats));
        let get = |name: &str, labels: &str| {
            samples
                .iter()
                .find(|s| s.name == format!("{PREFIX}_{name}") && s.labels == labels)
                .map(|s| s.value)
        };
        assert_eq!(get("group_count", "protocol=\"consumer\""), Some(3.0));
        assert_eq!(get("group_count", "protocol=\"share\""), Some(2.0));
        assert_eq!(get("group_count", "protocol=\"classic\""), Some(2.0));
        assert_eq!(get("consumer_group_count", "state=\"Stable\""), Some(3.0));
        assert_eq!(get("consumer_group_count", "state=\"Dead\""), Some(0.0));
        assert_eq!(get("share_group_count", "state=\"Empty\""), Some(2.0));
        assert_eq!(get("classic_group_count", "state=\"Empty\""), Some(2.0));
        assert_eq!(get("consumer_group_rebalance_count_total", ""), Some(2.0));
        assert_eq!(get("offset_commit_count_total", ""), Some(6.0));
        assert_eq!(get("group_completed_rebalance_count_total", ""), Some(0.0));
    }
}
