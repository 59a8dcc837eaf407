//! The metadata quorum's Raft figures under the names the Prometheus JMX
//! exporter gives Kafka's `raft-metrics`
//! (`kafka.server:type=raft-metrics`, Kafka's `KafkaRaftMetrics`):
//! `kafka_server_raft_metrics_current_leader`, `..._current_epoch`,
//! `..._high_watermark`, `..._log_end_offset` and `..._current_state`.
//!
//! Shard 0 hosts the quorum member; its `metrics sync` task copies the
//! figures from openraft's metrics (a watch channel read without waiting)
//! into [`RaftFigures`] about once a second. Nothing is served on a node
//! whose shard 0 has no quorum member yet.

use std::fmt::Error;

use prometheus_client::encoding::DescriptorEncoder;

use super::collect::{gauges, Labels};
use super::shard::Snapshot;

/// The JMX exporter's prefix of Kafka's `raft-metrics`.
const PREFIX: &str = "kafka_server_raft_metrics";

/// The values of Kafka's `current-state` (a string metric the JMX exporter
/// cannot serve): one `state` series each, 1 for the node's state.
pub const STATES: [&str; 6] = [
    "leader",
    "candidate",
    "voted",
    "follower",
    "unattached",
    "observer",
];

/// This node's view of the metadata quorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaftFigures {
    /// The active controller's node id; -1 when unknown
    /// (`current-leader`).
    pub leader: i64,
    /// The Raft term (`current-epoch`); None on a broker-only node, which
    /// does not take part in elections.
    pub epoch: Option<i64>,
    /// The next offset after the committed entries this node knows of: the
    /// committed log index + 1, -1 when nothing is known committed
    /// (`high-watermark`); None on a broker-only node.
    pub high_watermark: Option<i64>,
    /// The next offset after this node's last log entry: last log index +
    /// 1, 0 for an empty log (`log-end-offset`); None on a broker-only
    /// node.
    pub log_end_offset: Option<i64>,
    /// One of [`STATES`] (`current-state`).
    pub state: &'static str,
}

/// Encodes the `kafka_server_raft_metrics_*` gauges from the figures shard
/// 0 copied (nothing when there are none).
pub fn encode(enc: &mut DescriptorEncoder<'_>, snaps: &[Snapshot]) -> Result<(), Error> {
    let Some(r) = snaps.iter().find_map(|s| s.raft.clone()) else {
        return Ok(());
    };
    let one = |v: i64| vec![(Labels::new(), v)];
    gauges(
        enc,
        &format!("{PREFIX}_current_leader"),
        "The active controller's node id; -1 when unknown.",
        &one(r.leader),
    )?;
    let state: Vec<(Labels, i64)> = STATES
        .iter()
        .map(|s| (vec![("state", (*s).to_string())], i64::from(*s == r.state)))
        .collect();
    gauges(
        enc,
        &format!("{PREFIX}_current_state"),
        "1 for this node's state in the metadata quorum, 0 for the others.",
        &state,
    )?;
    let optional = [
        (
            "current_epoch",
            "The metadata quorum's current epoch (Raft term).",
            r.epoch,
        ),
        (
            "high_watermark",
            "The next offset after the metadata log entries known committed; -1 when unknown.",
            r.high_watermark,
        ),
        (
            "log_end_offset",
            "The next offset after this node's last metadata log entry.",
            r.log_end_offset,
        ),
    ];
    for (name, help, v) in optional {
        if let Some(v) = v {
            gauges(enc, &format!("{PREFIX}_{name}"), help, &one(v))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{parse, render};
    use crate::stall::registry;

    #[test]
    fn served_only_with_figures_and_one_state_set() {
        let stats = registry(2);
        let text = render(&stats);
        assert!(!text.contains(PREFIX), "{text}");
        let s = Snapshot {
            raft: Some(RaftFigures {
                leader: 2,
                epoch: Some(3),
                high_watermark: Some(10),
                log_end_offset: Some(11),
                state: "follower",
            }),
            ..Snapshot::default()
        };
        stats[0].broker.set_snapshot(s);
        let samples = parse(&render(&stats));
        let get = |name: &str, labels: &str| {
            samples
                .iter()
                .find(|s| s.name == format!("{PREFIX}_{name}") && s.labels == labels)
                .map(|s| s.value)
        };
        assert_eq!(get("current_leader", ""), Some(2.0));
        assert_eq!(get("current_epoch", ""), Some(3.0));
        assert_eq!(get("high_watermark", ""), Some(10.0));
        assert_eq!(get("log_end_offset", ""), Some(11.0));
        assert_eq!(get("current_state", "state=\"follower\""), Some(1.0));
        assert_eq!(get("current_state", "state=\"leader\""), Some(0.0));
    }
}
