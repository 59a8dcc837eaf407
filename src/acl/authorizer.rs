//! The authorizer's rules, as Kafka's `StandardAuthorizer` applies them
//! (`StandardAuthorizerData`):
//!
//! 1. A principal of `super.users` is allowed everything.
//! 2. The ACLs that cover the resource are those of its literal name, the
//!    literal wildcard `*`, and every prefix of its name (PREFIXED).
//!    Among those that name the principal (or `User:*`) and the host (or
//!    `*`): a DENY for the operation (or ALL) denies at once; an ALLOW for
//!    it, for ALL, or for an operation that implies it (DESCRIBE from
//!    READ/WRITE/DELETE/ALTER, DESCRIBE_CONFIGS from ALTER_CONFIGS)
//!    allows.
//! 3. Nothing allowed: denied, unless the resource has no ACL at all
//!    (whatever its principal) and `allow.everyone.if.no.acl.found` is
//!    true.
//!
//! [`AclIndex::authorize_by_type`] is Kafka's `authorizeByResourceType`,
//! which InitProducerId uses for an idempotent producer: allowed when some
//! resource of the type would allow the operation (an ALLOW not shadowed by
//! a DENY that covers it).

use std::collections::{BTreeSet, HashMap};

use super::model::{AclBinding, Operation, PatternType, Permission, ResourceType, WILDCARD};

/// The ACLs of one image, indexed for checks.
#[derive(Debug, Default, Clone)]
pub struct AclIndex {
    /// Literal ACLs by resource type, then name (`*` included).
    literal: HashMap<ResourceType, HashMap<String, Vec<AclBinding>>>,
    /// Prefixed ACLs by resource type, then prefix.
    prefixed: HashMap<ResourceType, Prefixes>,
    /// `super.users`, as `Type:name`.
    super_users: Vec<String>,
    /// `allow.everyone.if.no.acl.found`.
    allow_if_none: bool,
}

/// The prefixed ACLs of one resource type: by prefix, with the lengths (in
/// bytes) that some prefix has, so a check looks up only those lengths of
/// a name instead of every one.
#[derive(Debug, Default, Clone)]
struct Prefixes {
    by_prefix: HashMap<String, Vec<AclBinding>>,
    lengths: BTreeSet<usize>,
}

/// A decision with its reason, for the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A super user.
    SuperUser,
    /// An ALLOW ACL.
    Allowed,
    /// No ACL on the resource and `allow.everyone.if.no.acl.found`.
    NoAclAllowed,
    /// A DENY ACL.
    Denied,
    /// ACLs on the resource, none allowing.
    NotAllowed,
    /// No ACL on the resource (`allow.everyone.if.no.acl.found` false).
    NoAcl,
}

impl Verdict {
    /// Whether it allows.
    pub fn allowed(&self) -> bool {
        matches!(
            self,
            Verdict::SuperUser | Verdict::Allowed | Verdict::NoAclAllowed
        )
    }
}

fn principal_matches(acl: &str, principal: &str) -> bool {
    acl == principal || acl == "User:*"
}

fn host_matches(acl: &str, host: &str) -> bool {
    acl == WILDCARD || acl == host
}

impl AclIndex {
    /// Indexes `acls` with `super.users` and
    /// `allow.everyone.if.no.acl.found`.
    pub fn new<'a>(
        acls: impl IntoIterator<Item = &'a AclBinding>,
        super_users: Vec<String>,
        allow_if_none: bool,
    ) -> AclIndex {
        let mut ix = AclIndex {
            super_users,
            allow_if_none,
            ..AclIndex::default()
        };
        for a in acls {
            match a.pattern_type {
                PatternType::Literal => ix
                    .literal
                    .entry(a.resource_type)
                    .or_default()
                    .entry(a.resource_name.clone())
                    .or_default()
                    .push(a.clone()),
                PatternType::Prefixed => {
                    let p = ix.prefixed.entry(a.resource_type).or_default();
                    p.lengths.insert(a.resource_name.len());
                    p.by_prefix
                        .entry(a.resource_name.clone())
                        .or_default()
                        .push(a.clone());
                }
            }
        }
        ix
    }

    /// Whether `principal` is a super user.
    pub fn is_super_user(&self, principal: &str) -> bool {
        self.super_users.iter().any(|s| s == principal)
    }

    /// The ACLs that cover resource `name` of `rt`. Allocates nothing: one
    /// hash lookup for the name, one for `*`, and one per prefix length
    /// that some prefixed ACL of the type has.
    fn covering<'a>(
        &'a self,
        rt: ResourceType,
        name: &'a str,
    ) -> impl Iterator<Item = &'a AclBinding> + 'a {
        let names = self.literal.get(&rt);
        let literal = names.and_then(|m| m.get(name)).into_iter().flatten();
        let wildcard = names
            .filter(|_| name != WILDCARD)
            .and_then(|m| m.get(WILDCARD))
            .into_iter()
            .flatten();
        let prefixes = self.prefixed.get(&rt).into_iter().flat_map(move |p| {
            p.lengths
                .range(..=name.len())
                .filter(move |len| name.is_char_boundary(**len))
                .filter_map(move |len| p.by_prefix.get(&name[..*len]))
                .flatten()
        });
        literal.chain(wildcard).chain(prefixes)
    }

    /// Whether `principal` from `host` may do `op` on resource `name` of
    /// type `rt`, and why.
    pub fn authorize(
        &self,
        principal: &str,
        host: &str,
        op: Operation,
        rt: ResourceType,
        name: &str,
    ) -> Verdict {
        if self.is_super_user(principal) {
            return Verdict::SuperUser;
        }
        let mut any = false;
        let mut allowed = false;
        for acl in self.covering(rt, name) {
            any = true;
            if !principal_matches(&acl.principal, principal) || !host_matches(&acl.host, host) {
                continue;
            }
            match acl.permission {
                Permission::Deny if acl.operation.denies(op) => return Verdict::Denied,
                Permission::Allow if acl.operation.allows(op) => allowed = true,
                _ => {}
            }
        }
        if allowed {
            Verdict::Allowed
        } else if !any && self.allow_if_none {
            Verdict::NoAclAllowed
        } else if !any {
            Verdict::NoAcl
        } else {
            Verdict::NotAllowed
        }
    }

    /// Kafka's `authorizeByResourceType`: whether `principal` from `host`
    /// may do `op` on some resource of type `rt` (an ALLOW for it, literal
    /// or prefixed, that no DENY for it covers: a wildcard DENY, the same
    /// literal, or a prefix of it). With no ACL of the type at all,
    /// `allow.everyone.if.no.acl.found` decides.
    pub fn authorize_by_type(
        &self,
        principal: &str,
        host: &str,
        op: Operation,
        rt: ResourceType,
    ) -> bool {
        if self.is_super_user(principal) {
            return true;
        }
        let applies = |a: &&AclBinding| {
            a.resource_type == rt
                && principal_matches(&a.principal, principal)
                && host_matches(&a.host, host)
        };
        let all_of_type = || {
            self.literal
                .get(&rt)
                .into_iter()
                .flat_map(|m| m.values().flatten())
                .chain(
                    self.prefixed
                        .get(&rt)
                        .into_iter()
                        .flat_map(|p| p.by_prefix.values().flatten()),
                )
        };
        let mut any_of_type = false;
        let mut denied_literal = Vec::new();
        let mut denied_prefix = Vec::new();
        let mut allowed = Vec::new();
        for a in all_of_type() {
            any_of_type = true;
            if !applies(&a) {
                continue;
            }
            match a.permission {
                Permission::Deny if a.operation.denies(op) => match a.pattern_type {
                    PatternType::Literal if a.resource_name == WILDCARD => return false,
                    PatternType::Literal => denied_literal.push(a.resource_name.as_str()),
                    PatternType::Prefixed => denied_prefix.push(a.resource_name.as_str()),
                },
                Permission::Allow if a.operation.allows(op) => allowed.push(a),
                _ => {}
            }
        }
        if !any_of_type {
            return self.allow_if_none;
        }
        allowed.iter().any(|a| {
            let shadowed_by_prefix = denied_prefix.iter().any(|p| a.resource_name.starts_with(p));
            match a.pattern_type {
                PatternType::Literal => {
                    !shadowed_by_prefix && !denied_literal.contains(&a.resource_name.as_str())
                }
                PatternType::Prefixed => !shadowed_by_prefix,
            }
        })
    }

    /// The operations of `candidates` that `principal` from `host` may do on
    /// the resource, as the KIP-430 bit field (bit `code` set for each).
    pub fn authorized_operations(
        &self,
        principal: &str,
        host: &str,
        rt: ResourceType,
        name: &str,
        candidates: &[Operation],
    ) -> i32 {
        candidates
            .iter()
            .filter(|op| self.authorize(principal, host, **op, rt, name).allowed())
            .fold(0i32, |bits, op| bits | (1 << op.code()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(
        rt: ResourceType,
        name: &str,
        pt: PatternType,
        principal: &str,
        op: Operation,
        perm: Permission,
    ) -> AclBinding {
        AclBinding {
            resource_type: rt,
            resource_name: name.into(),
            pattern_type: pt,
            principal: principal.into(),
            host: "*".into(),
            operation: op,
            permission: perm,
        }
    }

    use Operation::*;
    use PatternType::*;
    use Permission::*;
    use ResourceType::*;

    /// StandardAuthorizerTest's implication cases: READ implies DESCRIBE,
    /// CREATE does not; a DENY READ does not deny DESCRIBE.
    #[test]
    fn implication() {
        let ix = AclIndex::new(
            &[
                acl(Topic, "t", Literal, "User:alice", Read, Allow),
                acl(Topic, "c", Literal, "User:alice", Create, Allow),
                acl(Topic, "d", Literal, "User:alice", Describe, Allow),
                acl(Topic, "d", Literal, "User:alice", Read, Deny),
                acl(
                    Cluster,
                    "kafka-cluster",
                    Literal,
                    "User:alice",
                    AlterConfigs,
                    Allow,
                ),
            ],
            vec![],
            false,
        );
        let a = |op, rt, n| ix.authorize("User:alice", "1.2.3.4", op, rt, n).allowed();
        assert!(a(Describe, Topic, "t"));
        assert!(!a(Describe, Topic, "c"));
        assert!(a(Describe, Topic, "d"));
        assert!(!a(Read, Topic, "d"));
        assert!(a(DescribeConfigs, Cluster, "kafka-cluster"));
    }

    /// A prefixed DENY on `alp` beats a prefixed ALLOW on `alpha`; a super
    /// user beats DENY; `User:*` matches everyone.
    #[test]
    fn deny_before_allow_and_super_users() {
        let ix = AclIndex::new(
            &[
                acl(Topic, "alpha", Prefixed, "User:bob", Read, Allow),
                acl(Topic, "alp", Prefixed, "User:bob", Read, Deny),
                acl(Topic, "beta", Literal, "User:*", All, Allow),
                acl(Topic, "*", Literal, "User:root", Read, Deny),
            ],
            vec!["User:root".into()],
            false,
        );
        assert_eq!(
            ix.authorize("User:bob", "h", Read, Topic, "alphabet"),
            Verdict::Denied
        );
        assert!(ix
            .authorize("User:carol", "h", Write, Topic, "beta")
            .allowed());
        assert_eq!(
            ix.authorize("User:root", "h", Read, Topic, "beta"),
            Verdict::SuperUser
        );
    }

    /// `allow.everyone.if.no.acl.found` only for resources without any
    /// ACL, whatever principal those ACLs name.
    #[test]
    fn allow_if_no_acl_only_without_acls() {
        let ix = AclIndex::new(
            &[acl(Topic, "owned", Literal, "User:alice", Read, Allow)],
            vec![],
            true,
        );
        assert_eq!(
            ix.authorize("User:bob", "h", Read, Topic, "free"),
            Verdict::NoAclAllowed
        );
        assert_eq!(
            ix.authorize("User:bob", "h", Read, Topic, "owned"),
            Verdict::NotAllowed
        );
    }

    /// Hosts: an ACL for one host does not apply to another.
    #[test]
    fn hosts() {
        let mut a = acl(Topic, "t", Literal, "User:alice", Read, Allow);
        a.host = "10.0.0.1".into();
        let ix = AclIndex::new(&[a], vec![], false);
        assert!(ix
            .authorize("User:alice", "10.0.0.1", Read, Topic, "t")
            .allowed());
        assert!(!ix
            .authorize("User:alice", "10.0.0.2", Read, Topic, "t")
            .allowed());
    }

    /// An idempotent producer needs WRITE on some topic (KAFKA-10619).
    #[test]
    fn by_resource_type() {
        let ix = AclIndex::new(
            &[
                acl(Topic, "t", Literal, "User:alice", Write, Allow),
                acl(Topic, "x", Prefixed, "User:bob", Write, Allow),
                acl(Topic, "x", Prefixed, "User:bob", Write, Deny),
                acl(Topic, "y", Literal, "User:carol", Write, Allow),
                acl(Topic, "*", Literal, "User:carol", Write, Deny),
            ],
            vec![],
            false,
        );
        assert!(ix.authorize_by_type("User:alice", "h", Write, Topic));
        assert!(!ix.authorize_by_type("User:bob", "h", Write, Topic));
        assert!(!ix.authorize_by_type("User:carol", "h", Write, Topic));
        assert!(!ix.authorize_by_type("User:dave", "h", Write, Topic));
        let none = AclIndex::new(&[], vec![], true);
        assert!(none.authorize_by_type("User:dave", "h", Write, Topic));
    }

    #[test]
    fn authorized_operations_bits() {
        let ix = AclIndex::new(
            &[acl(Topic, "t", Literal, "User:alice", Read, Allow)],
            vec![],
            false,
        );
        let bits =
            ix.authorized_operations("User:alice", "h", Topic, "t", &[Read, Write, Describe]);
        assert_eq!(bits, (1 << 3) | (1 << 8));
    }
}
