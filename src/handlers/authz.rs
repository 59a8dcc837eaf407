//! Authorization at the handlers: who sent a request (its principal and
//! host, from the connection) and what the ACLs of this shard's image let
//! them do, by Kafka's `StandardAuthorizer` rules (`acl::authorizer`). Off
//! unless `authorizer.class.name` names the StandardAuthorizer; then every
//! check passes. A denial is logged at info as Kafka's authorizer logger
//! does (principal, operation, resource, host), never with a secret.
//!
//! [`API_CHECKS`] is the one table of the checks each served API makes (the
//! resource type and operation, as Kafka 4.4's `KafkaApis` checks them);
//! a handler checks through [`Access`], which refuses (and logs as a
//! defect) any check the table does not list for its API, and the unit
//! test `every_served_api_has_a_check_row` holds the table against the
//! versions table.

use std::cell::RefCell;
use std::rc::Rc;

use kafka_protocol::messages::ApiKey;

use crate::acl::authorizer::AclIndex;
use crate::acl::model::{Denied, Operation, ResourceType, CLUSTER_NAME};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

use Operation as Op;
use ResourceType as Rt;

/// The checks each served API makes: (resource type, operation) pairs,
/// from Kafka 4.4 (`KafkaApis`, `docs/security/authorization-and-acls.md`
/// with two corrections: ElectLeaders is ALTER on the cluster, and an
/// idempotent InitProducerId passes with IDEMPOTENT_WRITE on the cluster
/// or WRITE on any topic, KAFKA-10619). An empty list means no check
/// (ApiVersions and the SASL exchange).
pub const API_CHECKS: &[(ApiKey, &[(ResourceType, Operation)])] = &[
    // WRITE each topic; a transactional batch also WRITE its transactional id.
    (
        ApiKey::Produce,
        &[(Rt::Topic, Op::Write), (Rt::TransactionalId, Op::Write)],
    ),
    // READ each topic; a follower's fetch CLUSTER_ACTION instead.
    (
        ApiKey::Fetch,
        &[(Rt::Topic, Op::Read), (Rt::Cluster, Op::ClusterAction)],
    ),
    (ApiKey::ListOffsets, &[(Rt::Topic, Op::Describe)]),
    // CLUSTER_ACTION (a follower), else DESCRIBE each topic.
    (
        ApiKey::OffsetForLeaderEpoch,
        &[(Rt::Cluster, Op::ClusterAction), (Rt::Topic, Op::Describe)],
    ),
    // DESCRIBE each topic; creating one (auto-create) CREATE on the cluster
    // or the topic.
    (
        ApiKey::Metadata,
        &[
            (Rt::Topic, Op::Describe),
            (Rt::Cluster, Op::Create),
            (Rt::Topic, Op::Create),
        ],
    ),
    (ApiKey::ApiVersions, &[]),
    // CREATE on the cluster or the topic; DESCRIBE_CONFIGS for the configs
    // returned (v5+).
    (
        ApiKey::CreateTopics,
        &[
            (Rt::Cluster, Op::Create),
            (Rt::Topic, Op::Create),
            (Rt::Topic, Op::DescribeConfigs),
        ],
    ),
    // DELETE on the cluster, else DESCRIBE and DELETE on each topic.
    (
        ApiKey::DeleteTopics,
        &[
            (Rt::Cluster, Op::Delete),
            (Rt::Topic, Op::Delete),
            (Rt::Topic, Op::Describe),
        ],
    ),
    (ApiKey::CreatePartitions, &[(Rt::Topic, Op::Alter)]),
    (ApiKey::ElectLeaders, &[(Rt::Cluster, Op::Alter)]),
    (
        ApiKey::AlterPartitionReassignments,
        &[(Rt::Cluster, Op::Alter)],
    ),
    (
        ApiKey::ListPartitionReassignments,
        &[(Rt::Cluster, Op::Describe)],
    ),
    (ApiKey::DescribeCluster, &[(Rt::Cluster, Op::Describe)]),
    (
        ApiKey::DescribeTopicPartitions,
        &[(Rt::Topic, Op::Describe)],
    ),
    (ApiKey::DescribeQuorum, &[(Rt::Cluster, Op::Describe)]),
    // DESCRIBE on the group or the transactional id asked for.
    (
        ApiKey::FindCoordinator,
        &[
            (Rt::Group, Op::Describe),
            (Rt::TransactionalId, Op::Describe),
            (Rt::Cluster, Op::ClusterAction),
        ],
    ),
    (ApiKey::JoinGroup, &[(Rt::Group, Op::Read)]),
    (ApiKey::SyncGroup, &[(Rt::Group, Op::Read)]),
    (ApiKey::Heartbeat, &[(Rt::Group, Op::Read)]),
    (ApiKey::ConsumerGroupHeartbeat, &[(Rt::Group, Op::Read)]),
    (ApiKey::ConsumerGroupDescribe, &[(Rt::Group, Op::Describe)]),
    (
        ApiKey::ShareGroupHeartbeat,
        &[(Rt::Group, Op::Read), (Rt::Topic, Op::Describe)],
    ),
    (
        ApiKey::ShareGroupDescribe,
        &[(Rt::Group, Op::Describe), (Rt::Topic, Op::Describe)],
    ),
    (ApiKey::LeaveGroup, &[(Rt::Group, Op::Read)]),
    (
        ApiKey::OffsetCommit,
        &[(Rt::Group, Op::Read), (Rt::Topic, Op::Read)],
    ),
    (
        ApiKey::OffsetFetch,
        &[(Rt::Group, Op::Describe), (Rt::Topic, Op::Describe)],
    ),
    // DESCRIBE on the cluster lists every group; otherwise those the
    // principal may DESCRIBE.
    (
        ApiKey::ListGroups,
        &[(Rt::Cluster, Op::Describe), (Rt::Group, Op::Describe)],
    ),
    (ApiKey::DescribeGroups, &[(Rt::Group, Op::Describe)]),
    (ApiKey::DeleteGroups, &[(Rt::Group, Op::Delete)]),
    (
        ApiKey::OffsetDelete,
        &[(Rt::Group, Op::Delete), (Rt::Topic, Op::Read)],
    ),
    // On the broker (the cluster), the topic or the group (KIP-848's group
    // configs) named.
    (
        ApiKey::DescribeConfigs,
        &[
            (Rt::Cluster, Op::DescribeConfigs),
            (Rt::Topic, Op::DescribeConfigs),
            (Rt::Group, Op::DescribeConfigs),
        ],
    ),
    (
        ApiKey::AlterConfigs,
        &[
            (Rt::Cluster, Op::AlterConfigs),
            (Rt::Topic, Op::AlterConfigs),
            (Rt::Group, Op::AlterConfigs),
        ],
    ),
    (
        ApiKey::IncrementalAlterConfigs,
        &[
            (Rt::Cluster, Op::AlterConfigs),
            (Rt::Topic, Op::AlterConfigs),
            (Rt::Group, Op::AlterConfigs),
        ],
    ),
    (ApiKey::DeleteRecords, &[(Rt::Topic, Op::Delete)]),
    // Denied: an empty answer, as Kafka's.
    (ApiKey::DescribeLogDirs, &[(Rt::Cluster, Op::Describe)]),
    // WRITE on the transactional id; without one, IDEMPOTENT_WRITE on the
    // cluster or WRITE on some topic.
    (
        ApiKey::InitProducerId,
        &[
            (Rt::TransactionalId, Op::Write),
            (Rt::Cluster, Op::IdempotentWrite),
            (Rt::Topic, Op::Write),
        ],
    ),
    (ApiKey::DescribeProducers, &[(Rt::Topic, Op::Read)]),
    // WRITE on the transactional id and each topic; a broker's verify-only
    // call (v4+) CLUSTER_ACTION.
    (
        ApiKey::AddPartitionsToTxn,
        &[
            (Rt::TransactionalId, Op::Write),
            (Rt::Topic, Op::Write),
            (Rt::Cluster, Op::ClusterAction),
        ],
    ),
    (
        ApiKey::AddOffsetsToTxn,
        &[(Rt::TransactionalId, Op::Write), (Rt::Group, Op::Read)],
    ),
    (ApiKey::EndTxn, &[(Rt::TransactionalId, Op::Write)]),
    (
        ApiKey::TxnOffsetCommit,
        &[
            (Rt::TransactionalId, Op::Write),
            (Rt::Group, Op::Read),
            (Rt::Topic, Op::Read),
        ],
    ),
    // DESCRIBE on each transactional id, and on the topics its partitions
    // are in (the others left out).
    (
        ApiKey::DescribeTransactions,
        &[
            (Rt::TransactionalId, Op::Describe),
            (Rt::Topic, Op::Describe),
        ],
    ),
    (
        ApiKey::ListTransactions,
        &[(Rt::TransactionalId, Op::Describe)],
    ),
    // ALTER on the cluster, else CLUSTER_ACTION.
    (
        ApiKey::WriteTxnMarkers,
        &[(Rt::Cluster, Op::Alter), (Rt::Cluster, Op::ClusterAction)],
    ),
    (ApiKey::SaslHandshake, &[]),
    (ApiKey::SaslAuthenticate, &[]),
    (
        ApiKey::DescribeUserScramCredentials,
        &[(Rt::Cluster, Op::Describe)],
    ),
    (
        ApiKey::AlterUserScramCredentials,
        &[(Rt::Cluster, Op::Alter)],
    ),
    (ApiKey::CreateAcls, &[(Rt::Cluster, Op::Alter)]),
    (ApiKey::DescribeAcls, &[(Rt::Cluster, Op::Describe)]),
    (ApiKey::DeleteAcls, &[(Rt::Cluster, Op::Alter)]),
    (
        ApiKey::DescribeClientQuotas,
        &[(Rt::Cluster, Op::DescribeConfigs)],
    ),
    (
        ApiKey::AlterClientQuotas,
        &[(Rt::Cluster, Op::AlterConfigs)],
    ),
    (ApiKey::UpdateFeatures, &[(Rt::Cluster, Op::Alter)]),
    // KIP-932: READ on the group (the whole request), READ on each topic
    // (its partitions).
    (
        ApiKey::ShareFetch,
        &[(Rt::Group, Op::Read), (Rt::Topic, Op::Read)],
    ),
    (
        ApiKey::ShareAcknowledge,
        &[(Rt::Group, Op::Read), (Rt::Topic, Op::Read)],
    ),
    // The share coordinator's APIs (KIP-932): CLUSTER_ACTION.
    (
        ApiKey::InitializeShareGroupState,
        &[(Rt::Cluster, Op::ClusterAction)],
    ),
    (
        ApiKey::ReadShareGroupState,
        &[(Rt::Cluster, Op::ClusterAction)],
    ),
    (
        ApiKey::WriteShareGroupState,
        &[(Rt::Cluster, Op::ClusterAction)],
    ),
    (
        ApiKey::DeleteShareGroupState,
        &[(Rt::Cluster, Op::ClusterAction)],
    ),
    (
        ApiKey::ReadShareGroupStateSummary,
        &[(Rt::Cluster, Op::ClusterAction)],
    ),
    // The share group offsets APIs (KIP-932): the group (the whole
    // request), then each topic (TOPIC_AUTHORIZATION_FAILED for it).
    (
        ApiKey::DescribeShareGroupOffsets,
        &[(Rt::Group, Op::Describe), (Rt::Topic, Op::Describe)],
    ),
    (
        ApiKey::AlterShareGroupOffsets,
        &[(Rt::Group, Op::Read), (Rt::Topic, Op::Read)],
    ),
    (
        ApiKey::DeleteShareGroupOffsets,
        &[(Rt::Group, Op::Delete), (Rt::Topic, Op::Read)],
    ),
];

/// Whether [`API_CHECKS`] lists `(rt, op)` for `api`.
pub fn listed(api: ApiKey, rt: ResourceType, op: Operation) -> bool {
    API_CHECKS
        .iter()
        .any(|(k, checks)| *k == api && checks.contains(&(rt, op)))
}

/// An image's (metadata offset, version) and the index of its ACLs.
type CachedIndex = ((u64, u64), Rc<AclIndex>);

thread_local! {
    /// The index of the last image checked on this shard.
    static INDEX: RefCell<Option<CachedIndex>> = const { RefCell::new(None) };
}

/// What a request may do: its API, principal and host, and this shard's
/// ACL index (None without an authorizer: everything passes).
pub struct Access {
    api: ApiKey,
    index: Option<Rc<AclIndex>>,
    principal: String,
    host: String,
}

/// This shard's index of its image's ACLs (rebuilt when the image moves
/// on); None without an authorizer.
fn index(shard: &Shard) -> Option<Rc<AclIndex>> {
    let allow_if_none = shard.security.authorizer?;
    let image = shard.metadata();
    let key = (image.offset, image.version);
    Some(INDEX.with(|cell| {
        if let Some((k, ix)) = &*cell.borrow() {
            if *k == key {
                return ix.clone();
            }
        }
        let supers = shard
            .security
            .super_users
            .iter()
            .map(|p| p.to_string())
            .collect();
        let ix = Rc::new(AclIndex::new(image.acls.values(), supers, allow_if_none));
        *cell.borrow_mut() = Some((key, ix.clone()));
        ix
    }))
}

impl Access {
    /// The access of `frame`'s connection on `shard` (a request without a
    /// connection, made inside the broker, is `User:ANONYMOUS` from no
    /// host). Without an authorizer this allocates nothing.
    pub fn of(shard: &Shard, frame: &RequestFrame) -> Access {
        let index = index(shard);
        let (principal, host) = if index.is_some() {
            (
                frame
                    .context
                    .as_ref()
                    .map(|c| c.principal.to_string())
                    .unwrap_or_else(|| "User:ANONYMOUS".to_string()),
                frame.peer.map(|p| p.ip().to_string()).unwrap_or_default(),
            )
        } else {
            (String::new(), String::new())
        };
        Access {
            api: frame.api_key,
            index,
            principal,
            host,
        }
    }

    /// Whether an authorizer is configured.
    pub fn enabled(&self) -> bool {
        self.index.is_some()
    }

    /// Whether the request may do `op` on resource `name` of `rt`; a
    /// denial is logged (Kafka's audit line). A check [`API_CHECKS`] does
    /// not list for this API is refused and logged as a defect.
    pub fn allows(&self, op: Operation, rt: ResourceType, name: &str) -> bool {
        self.decide(op, rt, name, true)
    }

    /// [`Access::allows`] without the audit line on a denial (Kafka's
    /// `logIfDenied = false`, for a check with a fallback).
    pub fn allows_quietly(&self, op: Operation, rt: ResourceType, name: &str) -> bool {
        self.decide(op, rt, name, false)
    }

    fn decide(&self, op: Operation, rt: ResourceType, name: &str, log_denial: bool) -> bool {
        let Some(ix) = &self.index else { return true };
        if !listed(self.api, rt, op) {
            log::error!(
                "authorization: {:?} checked {op:?} on {rt:?}, which the check table does not list for it; refused",
                self.api
            );
            return false;
        }
        let verdict = ix.authorize(&self.principal, &self.host, op, rt, name);
        if log_denial && !verdict.allowed() {
            log::info!(
                "Principal = {} is Denied operation = {op:?} from host = {} on resource = {rt:?}:LITERAL:{name} for request = {:?} ({verdict:?})",
                self.principal,
                self.host,
                self.api
            );
        }
        verdict.allowed()
    }

    /// [`Access::allows`], as a typed refusal: `Err(Denied(rt))` maps to
    /// the resource type's *_AUTHORIZATION_FAILED code.
    pub fn check(&self, op: Operation, rt: ResourceType, name: &str) -> Result<(), Denied> {
        if self.allows(op, rt, name) {
            Ok(())
        } else {
            Err(Denied(rt))
        }
    }

    /// [`Access::allows`] on the cluster.
    pub fn cluster(&self, op: Operation) -> bool {
        self.allows(op, Rt::Cluster, CLUSTER_NAME)
    }

    /// Whether some resource of `rt` allows `op` (Kafka's
    /// `authorizeByResourceType`), a check the table must list too.
    pub fn any_of_type(&self, op: Operation, rt: ResourceType) -> bool {
        let Some(ix) = &self.index else { return true };
        if !listed(self.api, rt, op) {
            log::error!(
                "authorization: {:?} checked {op:?} on any {rt:?}, which the check table does not list for it; refused",
                self.api
            );
            return false;
        }
        ix.authorize_by_type(&self.principal, &self.host, op, rt)
    }

    /// KIP-430's authorized operations of a resource: the bit (1 << code)
    /// of each operation Kafka supports on `rt` that the principal may do
    /// (all of them without an authorizer). Not an access check: nothing
    /// is logged.
    pub fn operations(&self, rt: ResourceType, name: &str) -> i32 {
        let candidates = rt.supported_operations();
        match &self.index {
            None => candidates.iter().fold(0, |b, op| b | (1 << op.code())),
            Some(ix) => ix.authorized_operations(&self.principal, &self.host, rt, name, candidates),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::versions::SUPPORTED_APIS;

    /// Every served API has exactly one row, and the table has no row for
    /// an API that is not served.
    #[test]
    fn every_served_api_has_a_check_row() {
        for (key, _, _) in SUPPORTED_APIS {
            let rows = API_CHECKS.iter().filter(|(k, _)| k == key).count();
            assert_eq!(rows, 1, "{key:?} has {rows} rows in API_CHECKS");
        }
        for (key, _) in API_CHECKS {
            assert!(
                SUPPORTED_APIS.iter().any(|(k, _, _)| k == key),
                "{key:?} is checked but not served"
            );
        }
    }
}
