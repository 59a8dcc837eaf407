//! CreateAcls and DeleteAcls on the active controller (Kafka's
//! `AclControlManager`): new ACLs are checked and written as
//! AccessControlEntry records (an ACL that exists already is not written
//! again), filters remove the ACLs they match with
//! RemoveAccessControlEntry records. Each ACL has an id (a UUID), as in
//! KRaft.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::super::metadata::MetadataImage;
use super::super::records::MetadataRecord;
use crate::acl::model::{AclBinding, AclFilter, ResourceType, CLUSTER_NAME};

/// Why an ACL of CreateAcls is refused: INVALID_REQUEST (42) with the text,
/// as Kafka's `validateNewAcl` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AclError {
    /// The binding is not valid (the reason as Kafka words it).
    #[error("{0}")]
    InvalidRequest(String),
}

/// Checks a new ACL as Kafka does: a resource name, the cluster's only
/// name, a `Type:name` principal, a host.
pub fn validate(b: &AclBinding) -> Result<(), AclError> {
    let bad = |s: &str| Err(AclError::InvalidRequest(s.to_string()));
    if b.resource_name.is_empty() {
        return bad("Resource name should not be empty");
    }
    if b.resource_type == ResourceType::Cluster && b.resource_name != CLUSTER_NAME {
        return bad("The only valid name for the CLUSTER resource is kafka-cluster");
    }
    match b.principal.split_once(':') {
        Some((t, n)) if !t.is_empty() && !n.is_empty() => {}
        _ => {
            return bad(&format!(
                "Could not parse principal from `{}` (no colon is found)",
                b.principal
            ))
        }
    }
    if b.host.is_empty() {
        return bad("Invalid host: the host must not be empty");
    }
    Ok(())
}

/// The records and per-ACL results of a CreateAcls: each valid ACL not in
/// `image` (nor earlier in the request) gets an AccessControlEntry with a
/// fresh id; an ACL present already succeeds without a record.
pub fn create(
    image: &MetadataImage,
    acls: &[AclBinding],
    new_id: &mut dyn FnMut() -> Uuid,
) -> (Vec<MetadataRecord>, Vec<Result<(), AclError>>) {
    let mut records = Vec::new();
    let mut written: Vec<&AclBinding> = Vec::new();
    let results = acls
        .iter()
        .map(|b| {
            validate(b)?;
            let exists = image.acls.values().any(|a| a == b) || written.contains(&b);
            if !exists {
                written.push(b);
                records.push(MetadataRecord::AccessControlEntry {
                    id: new_id(),
                    acl: b.clone(),
                });
            }
            Ok(())
        })
        .collect();
    (records, results)
}

/// The records and per-filter matches of a DeleteAcls: every ACL of
/// `image` a filter matches is removed (once, however many filters match
/// it); each filter's result lists the ACLs it matched.
pub fn delete(
    image: &MetadataImage,
    filters: &[AclFilter],
) -> (Vec<MetadataRecord>, Vec<Vec<AclBinding>>) {
    let mut removed: Vec<Uuid> = Vec::new();
    let mut records = Vec::new();
    let matches = filters
        .iter()
        .map(|f| {
            image
                .acls
                .iter()
                .filter(|(_, a)| f.matches(a))
                .map(|(id, a)| {
                    if !removed.contains(id) {
                        removed.push(*id);
                        records.push(MetadataRecord::RemoveAccessControlEntry { id: *id });
                    }
                    a.clone()
                })
                .collect()
        })
        .collect();
    (records, matches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::model::{Operation, PatternFilter, PatternType, Permission};

    fn b(name: &str) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            resource_name: name.into(),
            pattern_type: PatternType::Literal,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: Operation::Read,
            permission: Permission::Allow,
        }
    }

    #[test]
    fn create_is_idempotent_and_checks_like_kafka() {
        let image = MetadataImage::empty("c".into());
        let mut n = 0u128;
        let mut id = || {
            n += 1;
            Uuid::from_u128(n)
        };
        let mut cluster = b("foobar");
        cluster.resource_type = ResourceType::Cluster;
        let mut no_colon = b("t");
        no_colon.principal = "alice".into();
        let (records, results) =
            create(&image, &[b("t"), b("t"), b(""), cluster, no_colon], &mut id);
        assert_eq!(records.len(), 1, "the same ACL twice is one record");
        assert!(results[0].is_ok() && results[1].is_ok());
        assert!(results[2..].iter().all(Result::is_err), "{results:?}");
        let image = image.apply(1, &records);
        let (records, results) = create(&image, &[b("t")], &mut id);
        assert!(records.is_empty() && results[0].is_ok());
        // Delete with a MATCH filter on the name.
        let f = AclFilter {
            resource_type: Some(ResourceType::Topic),
            resource_name: Some("t".into()),
            pattern: PatternFilter::Match,
            principal: None,
            host: None,
            operation: None,
            permission: None,
        };
        let (records, matched) = delete(&image, &[f.clone(), f]);
        assert_eq!(records.len(), 1);
        assert_eq!(matched[0].len(), 1);
        assert_eq!(matched[1].len(), 1);
        let image = image.apply(2, &records);
        assert!(image.acls.is_empty());
    }
}
