//! This node's quorum figures for the metrics endpoint (Kafka's
//! `raft-metrics`, see `metrics::raft`), read from openraft's metrics watch
//! channel without waiting.

use openraft::rt::WatchReceiver;
use openraft::ServerState;

use super::types::kafka_id;
use super::Quorum;
use crate::metrics::raft::RaftFigures;

impl Quorum {
    /// The figures of Kafka's `raft-metrics` as this node sees them: a
    /// voter's leader, term, committed and last log offsets and state; a
    /// broker-only node's leader only, as an `observer`.
    pub fn raft_figures(&self) -> RaftFigures {
        let Some(raft) = &self.raft else {
            return RaftFigures {
                leader: self
                    .observer
                    .as_ref()
                    .and_then(|o| o.leader())
                    .map_or(-1, i64::from),
                epoch: None,
                high_watermark: None,
                log_end_offset: None,
                state: "observer",
            };
        };
        let m = raft.metrics().borrow_watched().clone();
        let leader = m.current_leader.map(kafka_id);
        let state = match m.state {
            ServerState::Leader => "leader",
            ServerState::Candidate => "candidate",
            ServerState::Follower if leader.is_some() => "follower",
            ServerState::Learner => "observer",
            ServerState::Follower | ServerState::Shutdown => "unattached",
        };
        let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        RaftFigures {
            leader: leader.map_or(-1, i64::from),
            epoch: Some(as_i64(m.current_term)),
            high_watermark: Some(m.local_committed.map_or(-1, |c| as_i64(c.index) + 1)),
            log_end_offset: Some(m.last_log_index.map_or(0, |i| as_i64(i) + 1)),
            state,
        }
    }
}
