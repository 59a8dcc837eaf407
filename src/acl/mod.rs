//! Authorization as Kafka's `StandardAuthorizer` does it: the ACL model
//! ([`model`]: resource and pattern types, operations, permissions, with
//! Kafka's codes; bindings and filters) and the rules ([`authorizer`]: super
//! users, DENY before ALLOW, implied operations, wildcards and prefixes,
//! `allow.everyone.if.no.acl.found`). No I/O: the ACLs live in the metadata
//! log and every shard checks against the image it holds.

pub mod authorizer;
pub mod model;
