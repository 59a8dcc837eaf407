//! ACLs as Kafka defines them (`org.apache.kafka.common.acl` and
//! `resource`): resource types, pattern types, operations and permissions
//! with Kafka's wire codes, a binding (one ACL) and a filter (what
//! DescribeAcls and DeleteAcls match, with ANY and MATCH).

use serde::{Deserialize, Serialize};

/// A resource type (Kafka's `ResourceType`, wire code in parentheses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ResourceType {
    /// TOPIC (2).
    Topic,
    /// GROUP (3).
    Group,
    /// CLUSTER (4); its one resource is named `kafka-cluster`.
    Cluster,
    /// TRANSACTIONAL_ID (5).
    TransactionalId,
    /// DELEGATION_TOKEN (6).
    DelegationToken,
    /// USER (7).
    User,
}

/// The name of the cluster resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// The wildcard resource name and principal (`*`, `User:*`'s name).
pub const WILDCARD: &str = "*";

impl ResourceType {
    /// Kafka's code.
    pub fn code(self) -> i8 {
        match self {
            ResourceType::Topic => 2,
            ResourceType::Group => 3,
            ResourceType::Cluster => 4,
            ResourceType::TransactionalId => 5,
            ResourceType::DelegationToken => 6,
            ResourceType::User => 7,
        }
    }

    /// The operations Kafka supports on this type (its `AclEntry`
    /// `supportedOperations`): what KIP-430's authorized-operations bit
    /// fields are drawn from, and what an ACL check may ask.
    pub fn supported_operations(self) -> &'static [Operation] {
        use Operation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write, TwoPhaseCommit],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
        }
    }

    /// The type of code `c` (None: UNKNOWN, ANY or out of range).
    pub fn from_code(c: i8) -> Option<ResourceType> {
        Some(match c {
            2 => ResourceType::Topic,
            3 => ResourceType::Group,
            4 => ResourceType::Cluster,
            5 => ResourceType::TransactionalId,
            6 => ResourceType::DelegationToken,
            7 => ResourceType::User,
            _ => return None,
        })
    }
}

/// A refused check: the request may not do what it asked on a resource of
/// this type. Mapped to TOPIC_ (29), GROUP_ (30), CLUSTER_ (31),
/// TRANSACTIONAL_ID_ (53) or DELEGATION_TOKEN_AUTHORIZATION_FAILED (65) in
/// `error.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Denied(pub ResourceType);

/// How an ACL's resource name matches (Kafka's `PatternType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PatternType {
    /// LITERAL (3): the name itself, or `*` for every resource of the type.
    Literal,
    /// PREFIXED (4): every resource whose name starts with it.
    Prefixed,
}

impl PatternType {
    /// Kafka's code.
    pub fn code(self) -> i8 {
        match self {
            PatternType::Literal => 3,
            PatternType::Prefixed => 4,
        }
    }
}

/// An operation (Kafka's `AclOperation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Operation {
    /// ALL (2): every operation.
    All,
    /// READ (3).
    Read,
    /// WRITE (4).
    Write,
    /// CREATE (5).
    Create,
    /// DELETE (6).
    Delete,
    /// ALTER (7).
    Alter,
    /// DESCRIBE (8).
    Describe,
    /// CLUSTER_ACTION (9).
    ClusterAction,
    /// DESCRIBE_CONFIGS (10).
    DescribeConfigs,
    /// ALTER_CONFIGS (11).
    AlterConfigs,
    /// IDEMPOTENT_WRITE (12).
    IdempotentWrite,
    /// CREATE_TOKENS (13).
    CreateTokens,
    /// DESCRIBE_TOKENS (14).
    DescribeTokens,
    /// TWO_PHASE_COMMIT (15).
    TwoPhaseCommit,
}

impl Operation {
    /// Every operation but ALL, in code order.
    pub const EACH: [Operation; 13] = [
        Operation::Read,
        Operation::Write,
        Operation::Create,
        Operation::Delete,
        Operation::Alter,
        Operation::Describe,
        Operation::ClusterAction,
        Operation::DescribeConfigs,
        Operation::AlterConfigs,
        Operation::IdempotentWrite,
        Operation::CreateTokens,
        Operation::DescribeTokens,
        Operation::TwoPhaseCommit,
    ];

    /// Kafka's code.
    pub fn code(self) -> i8 {
        match self {
            Operation::All => 2,
            Operation::Read => 3,
            Operation::Write => 4,
            Operation::Create => 5,
            Operation::Delete => 6,
            Operation::Alter => 7,
            Operation::Describe => 8,
            Operation::ClusterAction => 9,
            Operation::DescribeConfigs => 10,
            Operation::AlterConfigs => 11,
            Operation::IdempotentWrite => 12,
            Operation::CreateTokens => 13,
            Operation::DescribeTokens => 14,
            Operation::TwoPhaseCommit => 15,
        }
    }

    /// The operation of code `c` (None: UNKNOWN, ANY or out of range).
    pub fn from_code(c: i8) -> Option<Operation> {
        if c == 2 {
            return Some(Operation::All);
        }
        Operation::EACH.into_iter().find(|o| o.code() == c)
    }

    /// Whether an ALLOW ACL for `self` grants `asked`: the same operation,
    /// ALL, or one that implies it (DESCRIBE from READ, WRITE, DELETE and
    /// ALTER; DESCRIBE_CONFIGS from ALTER_CONFIGS), as Kafka's
    /// `StandardAuthorizerData` does. A DENY matches only the same
    /// operation or ALL (DENY READ does not deny DESCRIBE).
    pub fn allows(self, asked: Operation) -> bool {
        self == asked
            || self == Operation::All
            || (asked == Operation::Describe
                && matches!(
                    self,
                    Operation::Read | Operation::Write | Operation::Delete | Operation::Alter
                ))
            || (asked == Operation::DescribeConfigs && self == Operation::AlterConfigs)
    }

    /// Whether a DENY ACL for `self` denies `asked`.
    pub fn denies(self, asked: Operation) -> bool {
        self == asked || self == Operation::All
    }
}

/// ALLOW or DENY (Kafka's `AclPermissionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Permission {
    /// DENY (2).
    Deny,
    /// ALLOW (3).
    Allow,
}

impl Permission {
    /// Kafka's code.
    pub fn code(self) -> i8 {
        match self {
            Permission::Deny => 2,
            Permission::Allow => 3,
        }
    }

    /// The permission of code `c`.
    pub fn from_code(c: i8) -> Option<Permission> {
        match c {
            2 => Some(Permission::Deny),
            3 => Some(Permission::Allow),
            _ => None,
        }
    }
}

/// One ACL (Kafka's `AclBinding`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AclBinding {
    /// The resource type.
    pub resource_type: ResourceType,
    /// The resource name, `*` (literal) for every one.
    pub resource_name: String,
    /// How the name matches.
    pub pattern_type: PatternType,
    /// `Type:name`, `User:*` for every principal.
    pub principal: String,
    /// The client host (an IP address), `*` for every one.
    pub host: String,
    /// The operation.
    pub operation: Operation,
    /// ALLOW or DENY.
    pub permission: Permission,
}

impl AclBinding {
    /// Whether this ACL's resource pattern covers resource `name` of
    /// `resource_type`.
    pub fn covers(&self, resource_type: ResourceType, name: &str) -> bool {
        self.resource_type == resource_type
            && match self.pattern_type {
                PatternType::Literal => {
                    self.resource_name == name || self.resource_name == WILDCARD
                }
                PatternType::Prefixed => name.starts_with(&self.resource_name),
            }
    }
}

/// How a filter matches resource patterns (Kafka's filter pattern types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PatternFilter {
    /// ANY (1): any pattern type, the name as given.
    Any,
    /// MATCH (2): every ACL that would apply to a resource of that name
    /// (its literal, the wildcard, and the prefixes of the name).
    Match,
    /// LITERAL or PREFIXED: that pattern type exactly.
    Exactly(PatternType),
}

/// What DescribeAcls and DeleteAcls match (Kafka's `AclBindingFilter`):
/// each field None matches anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclFilter {
    /// The resource type (None: ANY).
    pub resource_type: Option<ResourceType>,
    /// The resource name (None: any).
    pub resource_name: Option<String>,
    /// The pattern type.
    pub pattern: PatternFilter,
    /// The principal (None: any).
    pub principal: Option<String>,
    /// The host (None: any).
    pub host: Option<String>,
    /// The operation (None: ANY).
    pub operation: Option<Operation>,
    /// The permission (None: ANY).
    pub permission: Option<Permission>,
}

impl AclFilter {
    /// Whether `b` matches this filter.
    pub fn matches(&self, b: &AclBinding) -> bool {
        if self.resource_type.is_some_and(|t| t != b.resource_type)
            || self.principal.as_ref().is_some_and(|p| *p != b.principal)
            || self.host.as_ref().is_some_and(|h| *h != b.host)
            || self.operation.is_some_and(|o| o != b.operation)
            || self.permission.is_some_and(|p| p != b.permission)
        {
            return false;
        }
        match (self.pattern, &self.resource_name) {
            (PatternFilter::Exactly(t), name) => {
                b.pattern_type == t && name.as_ref().is_none_or(|n| *n == b.resource_name)
            }
            (PatternFilter::Any, name) => name.as_ref().is_none_or(|n| *n == b.resource_name),
            (PatternFilter::Match, None) => true,
            (PatternFilter::Match, Some(n)) => match b.pattern_type {
                PatternType::Literal => b.resource_name == *n || b.resource_name == WILDCARD,
                PatternType::Prefixed => n.starts_with(&b.resource_name),
            },
        }
    }
}
