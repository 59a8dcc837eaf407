//! The group coordinator (classic protocol) and committed offsets.
//!
//! A group lives on the shard that owns its `__consumer_offsets` partition
//! (`records::partition_for_group`, Kafka's formula); handlers on any shard
//! forward group requests there with `Shard::invoke_on`.
//!
//! Built in stages: [`membership`] is the classic protocol's state machine
//! (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, session and rebalance
//! deadlines) and [`offsets`] the committed offsets, both pure (they take
//! the request and `now` in ms and give results and effects); [`load`]
//! replays a `__consumer_offsets` partition into them; [`coordinator`] is the
//! shard glue that appends records ([`records`], Kafka's schemas), parks
//! responses and runs the timers. Errors are [`GroupError`]; the handlers map
//! them to Kafka codes (`src/error.rs`).

pub mod admin;
pub mod configs;
pub mod consumer;
pub mod consumer_coordinator;
pub mod coordinator;
#[cfg(test)]
mod core_tests;
pub mod error;
pub mod load;
pub mod membership;
mod migration;
pub mod offsets;
pub mod records;
pub mod share;
pub mod share_group_coordinator;
pub mod share_offsets;
pub mod state;

use bytes::Bytes;

pub use crate::config::GroupConfig;
pub use coordinator::GroupCoordinator;
pub use error::GroupError;
pub use membership::{Effect, GroupCore};
pub use offsets::UnknownGroup;

/// The internal topic holding committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// A JoinGroup request, as the coordinator needs it.
#[derive(Debug, Clone, Default)]
pub struct JoinArgs {
    /// Group id.
    pub group_id: String,
    /// Member id; empty on the first join.
    pub member_id: String,
    /// Static membership id (v5+, KIP-345).
    pub group_instance_id: Option<String>,
    /// Client id from the request header.
    pub client_id: String,
    /// Client address (`/ip`).
    pub client_host: String,
    /// Session timeout (ms).
    pub session_timeout_ms: i32,
    /// Rebalance timeout (ms); v0 uses the session timeout.
    pub rebalance_timeout_ms: i32,
    /// Protocol type (`consumer`).
    pub protocol_type: String,
    /// (assignor name, metadata), in the member's preference order.
    pub protocols: Vec<(String, Bytes)>,
    /// v4+: an unknown member gets MEMBER_ID_REQUIRED first (KIP-394).
    pub require_known_member_id: bool,
}

/// The coordinator's answer to a JoinGroup.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JoinResult {
    /// The error, if the join failed (generation is then -1).
    pub error: Option<GroupError>,
    /// Generation joined.
    pub generation_id: i32,
    /// Protocol type.
    pub protocol_type: Option<String>,
    /// Selected protocol.
    pub protocol_name: Option<String>,
    /// Leader member id.
    pub leader: String,
    /// This member's id.
    pub member_id: String,
    /// (member id, instance id, metadata) — only for the leader.
    pub members: Vec<(String, Option<String>, Bytes)>,
    /// v9+: the leader may skip computing an assignment (static rejoin).
    pub skip_assignment: bool,
}

impl JoinResult {
    /// An error answer for `member_id` (the id handed out, for
    /// MEMBER_ID_REQUIRED).
    pub fn error(error: GroupError, member_id: &str) -> JoinResult {
        JoinResult {
            error: Some(error),
            generation_id: -1,
            member_id: member_id.to_string(),
            ..Default::default()
        }
    }
}

/// A SyncGroup request.
#[derive(Debug, Clone)]
pub struct SyncArgs {
    /// Group id.
    pub group_id: String,
    /// Generation the member joined.
    pub generation_id: i32,
    /// Member id.
    pub member_id: String,
    /// Static membership id.
    pub group_instance_id: Option<String>,
    /// v5+: protocol type the member expects.
    pub protocol_type: Option<String>,
    /// v5+: protocol the member expects.
    pub protocol_name: Option<String>,
    /// The leader's assignments (member id, assignment); empty for followers.
    pub assignments: Vec<(String, Bytes)>,
}

/// The coordinator's answer to a SyncGroup.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncResult {
    /// The error, if the sync failed.
    pub error: Option<GroupError>,
    /// Protocol type.
    pub protocol_type: Option<String>,
    /// Protocol name.
    pub protocol_name: Option<String>,
    /// This member's assignment.
    pub assignment: Bytes,
}

impl SyncResult {
    /// An error answer.
    pub fn error(error: GroupError) -> SyncResult {
        SyncResult {
            error: Some(error),
            ..Default::default()
        }
    }
}

/// A member to remove with LeaveGroup.
#[derive(Debug, Clone, PartialEq)]
pub struct LeavingMember {
    /// Member id (may be empty for static members named by instance id).
    pub member_id: String,
    /// Static membership id.
    pub group_instance_id: Option<String>,
}

/// One partition of an OffsetCommit.
#[derive(Debug, Clone)]
pub struct CommitPartition {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Offset to commit.
    pub offset: i64,
    /// Leader epoch (-1 unknown).
    pub leader_epoch: i32,
    /// Client metadata.
    pub metadata: Option<String>,
    /// Error found before routing (unknown topic).
    pub error: Option<GroupError>,
}

impl CommitPartition {
    /// One partition of an OffsetCommit / TxnOffsetCommit, with
    /// UNKNOWN_TOPIC_OR_PARTITION as its error when `image` has no such
    /// partition.
    pub fn checked(
        image: &crate::cluster::metadata::MetadataImage,
        topic: &str,
        partition: i32,
        offset: i64,
        leader_epoch: i32,
        metadata: Option<String>,
    ) -> CommitPartition {
        let known = image
            .topic(topic)
            .is_some_and(|m| (0..m.partitions).contains(&partition));
        CommitPartition {
            topic: topic.to_string(),
            partition,
            offset,
            leader_epoch,
            metadata,
            error: (!known).then(|| GroupError::UnknownTopicOrPartition {
                topic: topic.to_string(),
                partition,
            }),
        }
    }
}

/// One committed offset as OffsetFetch returns it.
#[derive(Debug, Clone)]
pub struct FetchedOffset {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Committed offset, -1 when none.
    pub offset: i64,
    /// Leader epoch, -1 when unknown.
    pub leader_epoch: i32,
    /// Metadata.
    pub metadata: String,
    /// UNSTABLE_OFFSET_COMMIT when `require_stable` was asked and a
    /// transaction holds uncommitted offsets for it (KIP-447).
    pub error: Option<GroupError>,
}

/// A group as DescribeGroups shows it.
#[derive(Debug, Clone, Default)]
pub struct GroupDescription {
    /// Group id.
    pub group_id: String,
    /// State name ("Dead" for unknown groups).
    pub state: String,
    /// Protocol type.
    pub protocol_type: String,
    /// Protocol (assignor) name.
    pub protocol: String,
    /// (member id, instance id, client id, client host, metadata, assignment).
    pub members: Vec<DescribedMember>,
    /// The id names a consumer group (KIP-848), which DescribeGroups does
    /// not describe: v6 answers GROUP_ID_NOT_FOUND (69) with "Group G is
    /// not a classic group.", older versions a Dead group, as Kafka 4.4.
    pub consumer_group: bool,
}

/// A member as DescribeGroups shows it.
#[derive(Debug, Clone, Default)]
pub struct DescribedMember {
    /// Member id.
    pub member_id: String,
    /// Static membership id.
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Metadata for the selected protocol.
    pub metadata: Bytes,
    /// Current assignment.
    pub assignment: Bytes,
}

/// A group as ListGroups shows it.
#[derive(Debug, Clone)]
pub struct ListedGroup {
    /// Group id.
    pub group_id: String,
    /// Protocol type ("" for groups that only commit offsets).
    pub protocol_type: String,
    /// State name.
    pub state: String,
    /// Group type (ListGroups v5, KIP-848): `classic` or `consumer`.
    pub group_type: &'static str,
}

/// Topics a member subscribed to, read from its `consumer` protocol metadata
/// (ConsumerProtocolSubscription, [`consumer::embedded`]): the names read
/// before any malformed byte.
pub fn subscribed_topics(metadata: &[u8]) -> Vec<String> {
    consumer::embedded::subscribed_topics(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscription_topics_parse() {
        let mut m = vec![0u8, 1, 0, 0, 0, 2];
        for t in ["a", "bc"] {
            m.extend((t.len() as i16).to_be_bytes());
            m.extend(t.as_bytes());
        }
        m.extend([0xff, 0xff, 0xff, 0xff]);
        assert_eq!(
            subscribed_topics(&m),
            vec!["a".to_string(), "bc".to_string()]
        );
        assert!(subscribed_topics(&[0, 1, 0, 0, 0, 9, 0]).is_empty());
    }
}
