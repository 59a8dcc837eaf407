//! A consumer group's state, as Kafka's classic group coordinator keeps it:
//! Empty → PreparingRebalance → CompletingRebalance → Stable, and Dead.
//! Pure data and decisions; the state machine (`group::membership`) changes
//! it, the shard glue (`group::coordinator`) holds the parked responses and
//! runs the timers. Times are ms since the epoch, given by the caller.

use std::collections::HashMap;

use bytes::Bytes;
use indexmap::IndexMap;

/// Names a parked JoinGroup or SyncGroup request: the glue keeps the
/// response channel under this handle, the state machine answers it later
/// (`membership::Effect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestHandle(pub u64);

/// Where the suffix of a new member id (`client_id-SUFFIX`) comes from. The
/// shard glue (`group::coordinator`) gives random UUIDs, as Kafka names
/// members; the default, a counter ("1", "2", …), keeps the core
/// deterministic for tests.
pub struct MemberIdSource(Box<dyn FnMut() -> String + Send>);

impl MemberIdSource {
    /// Suffixes from `next`, one call per new member id.
    pub fn new(next: impl FnMut() -> String + Send + 'static) -> MemberIdSource {
        MemberIdSource(Box::new(next))
    }

    /// Suffixes "1", "2", … in order.
    pub fn counter() -> MemberIdSource {
        let mut n: u64 = 0;
        MemberIdSource::new(move || {
            n += 1;
            n.to_string()
        })
    }

    /// The next member id for a client: `client_id-SUFFIX`.
    pub fn member_id(&mut self, client_id: &str) -> String {
        format!("{client_id}-{}", (self.0)())
    }
}

impl Default for MemberIdSource {
    /// [`MemberIdSource::counter`].
    fn default() -> MemberIdSource {
        MemberIdSource::counter()
    }
}

impl std::fmt::Debug for MemberIdSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemberIdSource")
    }
}

/// Kafka's group states (the strings are what DescribeGroups/ListGroups show).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    /// No members; offsets may still exist.
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Joined; waiting for the leader's assignment (SyncGroup).
    CompletingRebalance,
    /// Assignment delivered.
    Stable,
    /// Deleted or never existed.
    Dead,
}

impl GroupState {
    /// The name Kafka uses on the wire.
    pub fn as_str(&self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// One member of a group.
#[derive(Debug)]
pub struct Member {
    /// Member id given by the coordinator.
    pub member_id: String,
    /// Static membership id (KIP-345).
    pub group_instance_id: Option<String>,
    /// Client id from the request header.
    pub client_id: String,
    /// Client address, `/ip` as Kafka shows it.
    pub client_host: String,
    /// `session.timeout.ms` of the member.
    pub session_timeout_ms: i32,
    /// `max.poll.interval.ms` (rebalance timeout) of the member.
    pub rebalance_timeout_ms: i32,
    /// Protocol type (`consumer`).
    pub protocol_type: String,
    /// Supported protocols (assignor name, metadata) in preference order.
    pub protocols: Vec<(String, Bytes)>,
    /// Assignment from the last completed SyncGroup.
    pub assignment: Bytes,
    /// Last heartbeat (or join/sync) time (ms since the epoch).
    pub last_heartbeat_ms: i64,
    /// A JoinGroup waiting for the rebalance to complete.
    pub awaiting_join: Option<RequestHandle>,
    /// A SyncGroup waiting for the leader's assignment.
    pub awaiting_sync: Option<RequestHandle>,
}

impl Member {
    /// The metadata this member sent for `protocol`.
    pub fn metadata_for(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(n, _)| n == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }

    /// True when the member's protocols equal `other` (names and metadata).
    pub fn same_protocols(&self, other: &[(String, Bytes)]) -> bool {
        self.protocols.as_slice() == other
    }

    /// When the member's session ends without a heartbeat (ms): last
    /// heartbeat + `session.timeout.ms`.
    pub fn session_deadline_ms(&self) -> i64 {
        self.last_heartbeat_ms + i64::from(self.session_timeout_ms.max(1))
    }
}

/// A group and its members.
#[derive(Debug)]
pub struct Group {
    /// Group id.
    pub group_id: String,
    /// Current state.
    pub state: GroupState,
    /// Generation, incremented on every completed join.
    pub generation: i32,
    /// Protocol type shared by all members.
    pub protocol_type: Option<String>,
    /// Protocol (assignor) selected for this generation.
    pub protocol_name: Option<String>,
    /// Leader member id.
    pub leader: Option<String>,
    /// Members in join order.
    pub members: IndexMap<String, Member>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, not yet joined
    /// (KIP-394), with when they lapse (ms: one session timeout later).
    pub pending_members: HashMap<String, i64>,
    /// group.instance.id → member id (KIP-345).
    pub static_members: HashMap<String, String>,
    /// Do not complete the join before this time (ms;
    /// `group.initial.rebalance.delay.ms` after leaving Empty).
    pub join_not_before_ms: i64,
    /// Complete the join at this time even if members are missing (ms; the
    /// largest rebalance timeout after entering PreparingRebalance).
    pub rebalance_deadline_ms: i64,
    /// The earliest deadline a timer is armed for (ms), so that the glue
    /// arms one timer per group, not one per event.
    pub timer_at_ms: Option<i64>,
    /// When the state last changed (ms since the epoch).
    pub state_timestamp_ms: i64,
}

impl Group {
    /// A new, Empty group.
    pub fn new(group_id: &str, now_ms: i64) -> Group {
        Group {
            group_id: group_id.to_string(),
            state: GroupState::Empty,
            generation: 0,
            protocol_type: None,
            protocol_name: None,
            leader: None,
            members: IndexMap::new(),
            pending_members: HashMap::new(),
            static_members: HashMap::new(),
            join_not_before_ms: now_ms,
            rebalance_deadline_ms: now_ms,
            timer_at_ms: None,
            state_timestamp_ms: now_ms,
        }
    }

    /// Moves to `state`, recording when.
    pub fn transition(&mut self, state: GroupState, now_ms: i64) {
        self.state = state;
        self.state_timestamp_ms = now_ms;
    }

    /// True when a joining member's protocols are compatible with the group:
    /// the same protocol type and at least one protocol every member supports.
    pub fn supports(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        if self.protocol_type.as_deref() != Some(protocol_type) {
            return false;
        }
        let candidates = self.candidate_protocols();
        protocols
            .iter()
            .any(|(n, _)| candidates.iter().any(|c| c == n))
    }

    /// Protocols supported by every member.
    pub fn candidate_protocols(&self) -> Vec<String> {
        let mut it = self.members.values();
        let Some(first) = it.next() else {
            return Vec::new();
        };
        let mut c: Vec<String> = first.protocols.iter().map(|(n, _)| n.clone()).collect();
        for m in it {
            c.retain(|n| m.protocols.iter().any(|(p, _)| p == n));
        }
        c
    }

    /// Kafka's selection: each member votes for its most preferred candidate;
    /// the most votes wins (ties by the first member's preference order).
    pub fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        if candidates.is_empty() {
            return None;
        }
        let mut votes: Vec<(String, usize)> = candidates.iter().map(|c| (c.clone(), 0)).collect();
        for m in self.members.values() {
            if let Some((n, _)) = m.protocols.iter().find(|(n, _)| candidates.contains(n)) {
                if let Some(v) = votes.iter_mut().find(|(c, _)| c == n) {
                    v.1 += 1;
                }
            }
        }
        let max = votes.iter().map(|(_, v)| *v).max().unwrap_or(0);
        votes.into_iter().find(|(_, v)| *v == max).map(|(c, _)| c)
    }

    /// True when every member has a parked JoinGroup (all rejoined).
    pub fn all_joined(&self) -> bool {
        self.members.values().all(|m| m.awaiting_join.is_some())
    }

    /// Largest rebalance timeout among members (ms), Kafka's join deadline.
    pub fn max_rebalance_timeout_ms(&self) -> i32 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    /// Removes a member (and its static mapping); gives it back.
    pub fn remove_member(&mut self, member_id: &str) -> Option<Member> {
        let m = self.members.shift_remove(member_id)?;
        if let Some(i) = &m.group_instance_id {
            if self.static_members.get(i).map(String::as_str) == Some(member_id) {
                self.static_members.remove(i);
            }
        }
        if self.leader.as_deref() == Some(member_id) {
            self.leader = self.members.keys().next().cloned();
        }
        Some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, protos: &[&str]) -> Member {
        Member {
            member_id: id.into(),
            group_instance_id: None,
            client_id: "c".into(),
            client_host: "/h".into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 20_000,
            protocol_type: "consumer".into(),
            protocols: protos
                .iter()
                .map(|p| (p.to_string(), Bytes::new()))
                .collect(),
            assignment: Bytes::new(),
            last_heartbeat_ms: 0,
            awaiting_join: None,
            awaiting_sync: None,
        }
    }

    #[test]
    fn protocol_selection_votes() {
        let mut g = Group::new("g", 0);
        g.protocol_type = Some("consumer".into());
        g.members
            .insert("a".into(), member("a", &["range", "roundrobin"]));
        g.members
            .insert("b".into(), member("b", &["roundrobin", "range"]));
        g.members.insert("c".into(), member("c", &["roundrobin"]));
        assert_eq!(g.candidate_protocols(), vec!["roundrobin".to_string()]);
        assert_eq!(g.select_protocol().as_deref(), Some("roundrobin"));
        assert!(g.supports("consumer", &[("roundrobin".into(), Bytes::new())]));
        assert!(!g.supports("consumer", &[("sticky".into(), Bytes::new())]));
        assert!(!g.supports("connect", &[("roundrobin".into(), Bytes::new())]));
    }

    #[test]
    fn remove_member_moves_leader() {
        let mut g = Group::new("g", 0);
        g.members.insert("a".into(), member("a", &["range"]));
        g.members.insert("b".into(), member("b", &["range"]));
        g.leader = Some("a".into());
        g.remove_member("a");
        assert_eq!(g.leader.as_deref(), Some("b"));
        assert_eq!(
            GroupState::CompletingRebalance.as_str(),
            "CompletingRebalance"
        );
    }
}
