//! `fjord acls list | create | delete`, the operations of Kafka's
//! `kafka-acls.sh` (DescribeAcls, CreateAcls, DeleteAcls), in Kafka's
//! model: a resource (type, name, pattern type) and an entry (principal,
//! host, operation, permission).

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use serde_json::{json, Value};

use super::client::{ClientError, Connection};
use super::output::{table, Report};

/// Kafka's `ResourceType` names and codes.
const RESOURCE_TYPES: &[(&str, i8)] = &[
    ("any", 1),
    ("topic", 2),
    ("group", 3),
    ("cluster", 4),
    ("transactional-id", 5),
    ("delegation-token", 6),
    ("user", 7),
];

/// Kafka's `PatternType` names and codes.
const PATTERN_TYPES: &[(&str, i8)] = &[("any", 1), ("match", 2), ("literal", 3), ("prefixed", 4)];

/// Kafka's `AclOperation` names and codes.
const OPERATIONS: &[(&str, i8)] = &[
    ("any", 1),
    ("all", 2),
    ("read", 3),
    ("write", 4),
    ("create", 5),
    ("delete", 6),
    ("alter", 7),
    ("describe", 8),
    ("cluster-action", 9),
    ("describe-configs", 10),
    ("alter-configs", 11),
    ("idempotent-write", 12),
    ("create-tokens", 13),
    ("describe-tokens", 14),
    ("two-phase-commit", 15),
];

/// Kafka's `AclPermissionType` names and codes.
const PERMISSIONS: &[(&str, i8)] = &[("any", 1), ("deny", 2), ("allow", 3)];

fn code_of(table: &[(&str, i8)], what: &str, v: &str) -> Result<i8, String> {
    let norm = v.trim().to_ascii_lowercase().replace('_', "-");
    // Kafka's own spellings (ClusterAction, DescribeConfigs) work too.
    let squashed = norm.replace('-', "");
    table
        .iter()
        .find(|(n, _)| *n == norm || n.replace('-', "") == squashed)
        .map(|(_, c)| *c)
        .ok_or_else(|| {
            format!(
                "unknown {what} {v:?} (one of {})",
                table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )
        })
}

fn name_of(table: &[(&'static str, i8)], code: i8) -> String {
    table
        .iter()
        .find(|(_, c)| *c == code)
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| format!("unknown({code})"))
}

/// An ACL binding or filter with Kafka's codes. In a filter, None stands
/// for "any" among names, principals and hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct Acl {
    /// Resource type code.
    pub resource_type: i8,
    /// Resource name (`kafka-cluster` for the cluster).
    pub resource_name: Option<String>,
    /// Pattern type code.
    pub pattern_type: i8,
    /// Principal, e.g. `User:alice`.
    pub principal: Option<String>,
    /// Host, `*` for every host.
    pub host: Option<String>,
    /// Operation code.
    pub operation: i8,
    /// Permission code.
    pub permission: i8,
}

/// The options naming ACLs, as given on the command line.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AclSpec {
    /// Resource type: topic, group, cluster, transactional-id,
    /// delegation-token, user (any: every type, for list/delete).
    #[arg(long = "resource-type")]
    pub resource_type: Option<String>,
    /// Resource name (`kafka-cluster` for the cluster; `*` every resource).
    #[arg(long = "resource-name")]
    pub resource_name: Option<String>,
    /// Shorthand for --resource-type topic --resource-name NAME.
    #[arg(long)]
    pub topic: Option<String>,
    /// Shorthand for --resource-type group --resource-name NAME.
    #[arg(long)]
    pub group: Option<String>,
    /// Shorthand for --resource-type cluster --resource-name kafka-cluster.
    #[arg(long)]
    pub cluster: bool,
    /// Shorthand for --resource-type transactional-id --resource-name NAME.
    #[arg(long = "transactional-id")]
    pub transactional_id: Option<String>,
    /// Pattern type: literal or prefixed (any, match: for list/delete).
    #[arg(long = "resource-pattern-type")]
    pub pattern_type: Option<String>,
    /// Principal, e.g. User:alice.
    #[arg(long)]
    pub principal: Option<String>,
    /// Host the principal connects from (`*`: any host).
    #[arg(long)]
    pub host: Option<String>,
    /// Operation: read, write, create, delete, alter, describe,
    /// cluster-action, describe-configs, alter-configs, idempotent-write,
    /// create-tokens, describe-tokens, two-phase-commit, all (any: for
    /// list/delete).
    #[arg(long)]
    pub operation: Option<String>,
    /// Permission: allow or deny (any: for list/delete).
    #[arg(long)]
    pub permission: Option<String>,
}

impl AclSpec {
    /// Takes whether a filter is wanted (list/delete: unset options match
    /// anything) or a binding (create: every field needed; host defaults
    /// to `*`, pattern to literal, permission to allow); gives the ACL.
    pub fn to_acl(&self, filter: bool) -> Result<Acl, String> {
        let (rt, rn) = if let Some(t) = &self.topic {
            ("topic".to_string(), Some(t.clone()))
        } else if let Some(g) = &self.group {
            ("group".to_string(), Some(g.clone()))
        } else if self.cluster {
            ("cluster".to_string(), Some("kafka-cluster".to_string()))
        } else if let Some(t) = &self.transactional_id {
            ("transactional-id".to_string(), Some(t.clone()))
        } else {
            (
                self.resource_type.clone().unwrap_or_else(|| "any".into()),
                self.resource_name.clone(),
            )
        };
        let any = |o: &Option<String>, dflt: &str| o.clone().unwrap_or_else(|| dflt.to_string());
        let acl = Acl {
            resource_type: code_of(RESOURCE_TYPES, "resource type", &rt)?,
            resource_name: rn,
            pattern_type: code_of(
                PATTERN_TYPES,
                "pattern type",
                &any(&self.pattern_type, if filter { "any" } else { "literal" }),
            )?,
            principal: self.principal.clone(),
            host: if filter {
                self.host.clone()
            } else {
                Some(any(&self.host, "*"))
            },
            operation: code_of(
                OPERATIONS,
                "operation",
                &any(&self.operation, if filter { "any" } else { "" }),
            )?,
            permission: code_of(
                PERMISSIONS,
                "permission",
                &any(&self.permission, if filter { "any" } else { "allow" }),
            )?,
        };
        if !filter {
            if acl.resource_type == 1 || acl.resource_name.is_none() {
                return Err("create needs a resource: --topic, --group, --cluster, \
                     --transactional-id or --resource-type with --resource-name"
                    .into());
            }
            if acl.principal.is_none() {
                return Err("create needs --principal (e.g. User:alice)".into());
            }
            if acl.operation == 1 || acl.pattern_type <= 2 || acl.permission == 1 {
                return Err(
                    "create needs a concrete --operation, --resource-pattern-type and --permission"
                        .into(),
                );
            }
        }
        Ok(acl)
    }
}

fn sb(s: &Option<String>) -> Option<StrBytes> {
    s.as_ref().map(|v| StrBytes::from_string(v.clone()))
}

/// Takes a filter; gives the ACLs matching it (DescribeAcls).
pub fn list(c: &mut Connection, f: &Acl) -> Result<Vec<Acl>, ClientError> {
    let v = c.version(ApiKey::DescribeAcls, 3)?;
    let mut req = DescribeAclsRequest::default();
    req.resource_type_filter = f.resource_type;
    req.resource_name_filter = sb(&f.resource_name);
    req.pattern_type_filter = f.pattern_type;
    req.principal_filter = sb(&f.principal);
    req.host_filter = sb(&f.host);
    req.operation = f.operation;
    req.permission_type = f.permission;
    let resp: DescribeAclsResponse = c.send(ApiKey::DescribeAcls, v, &req)?;
    ClientError::check("list ACLs", resp.error_code, resp.error_message.as_ref())?;
    let mut out = Vec::new();
    for r in resp.resources {
        for a in r.acls {
            out.push(Acl {
                resource_type: r.resource_type,
                resource_name: Some(r.resource_name.to_string()),
                pattern_type: r.pattern_type,
                principal: Some(a.principal.to_string()),
                host: Some(a.host.to_string()),
                operation: a.operation,
                permission: a.permission_type,
            });
        }
    }
    Ok(out)
}

/// Takes a binding; creates it (CreateAcls).
pub fn create(c: &mut Connection, a: &Acl) -> Result<(), ClientError> {
    let v = c.version(ApiKey::CreateAcls, 3)?;
    let mut cr = create_acls_request::AclCreation::default();
    cr.resource_type = a.resource_type;
    cr.resource_name = sb(&a.resource_name).unwrap_or_default();
    cr.resource_pattern_type = a.pattern_type;
    cr.principal = sb(&a.principal).unwrap_or_default();
    cr.host = sb(&a.host).unwrap_or_else(|| StrBytes::from_static_str("*"));
    cr.operation = a.operation;
    cr.permission_type = a.permission;
    let mut req = CreateAclsRequest::default();
    req.creations = vec![cr];
    let resp: CreateAclsResponse = c.send(ApiKey::CreateAcls, v, &req)?;
    for r in &resp.results {
        ClientError::check("create ACL", r.error_code, r.error_message.as_ref())?;
    }
    Ok(())
}

/// Takes a filter; deletes the ACLs it matches and gives them (DeleteAcls).
pub fn delete(c: &mut Connection, f: &Acl) -> Result<Vec<Acl>, ClientError> {
    let v = c.version(ApiKey::DeleteAcls, 3)?;
    let mut df = delete_acls_request::DeleteAclsFilter::default();
    df.resource_type_filter = f.resource_type;
    df.resource_name_filter = sb(&f.resource_name);
    df.pattern_type_filter = f.pattern_type;
    df.principal_filter = sb(&f.principal);
    df.host_filter = sb(&f.host);
    df.operation = f.operation;
    df.permission_type = f.permission;
    let mut req = DeleteAclsRequest::default();
    req.filters = vec![df];
    let resp: DeleteAclsResponse = c.send(ApiKey::DeleteAcls, v, &req)?;
    let mut out = Vec::new();
    for r in resp.filter_results {
        ClientError::check("delete ACLs", r.error_code, r.error_message.as_ref())?;
        for m in r.matching_acls {
            ClientError::check("delete ACL", m.error_code, m.error_message.as_ref())?;
            out.push(Acl {
                resource_type: m.resource_type,
                resource_name: Some(m.resource_name.to_string()),
                pattern_type: m.pattern_type,
                principal: Some(m.principal.to_string()),
                host: Some(m.host.to_string()),
                operation: m.operation,
                permission: m.permission_type,
            });
        }
    }
    Ok(out)
}

/// Takes ACLs; gives a table and JSON (`acls`: a list of {resource_type,
/// resource_name, pattern_type, principal, host, operation, permission},
/// names lower-case as the options take them).
pub fn report(acls: &[Acl]) -> Report {
    let rows: Vec<Vec<String>> = acls
        .iter()
        .map(|a| {
            vec![
                name_of(RESOURCE_TYPES, a.resource_type),
                a.resource_name.clone().unwrap_or_default(),
                name_of(PATTERN_TYPES, a.pattern_type),
                a.principal.clone().unwrap_or_default(),
                a.host.clone().unwrap_or_default(),
                name_of(OPERATIONS, a.operation),
                name_of(PERMISSIONS, a.permission),
            ]
        })
        .collect();
    let docs: Vec<Value> = acls
        .iter()
        .map(|a| {
            json!({
                "resource_type": name_of(RESOURCE_TYPES, a.resource_type),
                "resource_name": a.resource_name,
                "pattern_type": name_of(PATTERN_TYPES, a.pattern_type),
                "principal": a.principal,
                "host": a.host,
                "operation": name_of(OPERATIONS, a.operation),
                "permission": name_of(PERMISSIONS, a.permission),
            })
        })
        .collect();
    Report::new(
        json!({ "acls": docs }),
        table(
            &[
                "RESOURCE-TYPE",
                "RESOURCE-NAME",
                "PATTERN",
                "PRINCIPAL",
                "HOST",
                "OPERATION",
                "PERMISSION",
            ],
            &rows,
        ),
    )
}
