//! AlterClientQuotas on the active controller (Kafka's
//! `ClientQuotaControlManager`): each entity's changes are checked (its
//! entity types, their combination, each key and value) and an entity
//! without an error gets one ClientQuota record per key whose value
//! changes (a removal of a key the entity does not have writes nothing).
//! The answer is per entity, in order of first appearance; an entity
//! named twice, or a key named twice for one entity, is refused as Kafka
//! refuses it ("Ignoring duplicate entity …").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::super::metadata::MetadataImage;
use super::super::records::MetadataRecord;
use crate::quota::model::{
    EntityName, QuotaEntity, QuotaValue, ValueType, CLIENT_ID, IP, IP_KEYS, USER, USER_CLIENT_KEYS,
};

/// One entity's changes, as AlterClientQuotas carries them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaAlteration {
    /// The entity: (entity type, name or None for the default) pairs.
    pub entity: Vec<(String, EntityName)>,
    /// (key, new value, or None to remove the key).
    pub ops: Vec<(String, Option<f64>)>,
}

/// Why an entity's changes (or a DescribeClientQuotas filter) are refused;
/// each maps to its Kafka code in `crate::error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum QuotaError {
    /// INVALID_REQUEST (42), with Kafka's text.
    #[error("{0}")]
    InvalidRequest(String),
    /// UNSUPPORTED_VERSION (35): a filter on an entity type Kafka does not
    /// know (its DescribeClientQuotas answer).
    #[error("Unsupported entity type {0}")]
    UnsupportedEntityType(String),
}

fn invalid(s: impl Into<String>) -> QuotaError {
    QuotaError::InvalidRequest(s.into())
}

/// The display of an entity as Kafka's messages show it, from the
/// request's pairs.
fn display(parts: &[(String, EntityName)]) -> String {
    let inner: Vec<String> = parts
        .iter()
        .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("null")))
        .collect();
    format!("ClientQuotaEntity(entries={{{}}})", inner.join(", "))
}

/// Quota keys with their value types.
pub type Keys = &'static [(&'static str, ValueType)];

/// The entity of a request's pairs, checked as Kafka's `validateEntity`
/// and `configKeysForEntityType` do; gives it with the keys its types
/// allow.
pub fn validate_entity(parts: &[(String, EntityName)]) -> Result<(QuotaEntity, Keys), QuotaError> {
    if parts.is_empty() {
        return Err(invalid("Invalid empty client quota entity"));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (t, n) in parts {
        if seen.contains(&t.as_str()) {
            return Err(invalid(format!(
                "Invalid client quota entity, duplicate entity entry {t}"
            )));
        }
        if ![USER, CLIENT_ID, IP].contains(&t.as_str()) {
            return Err(invalid(format!("Unhandled client quota entity type: {t}")));
        }
        if n.as_deref() == Some("") {
            return Err(invalid(format!("Empty {t} not supported")));
        }
        seen.push(t);
    }
    let entity = QuotaEntity::from_parts(parts)
        .ok_or_else(|| invalid("Invalid empty client quota entity"))?;
    let keys = if let Some(ip) = &entity.ip {
        if entity.user.is_some() || entity.client_id.is_some() {
            // Kafka's text, its missing space included.
            return Err(invalid(
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
            ));
        }
        if let Some(ip) = ip {
            if ip.parse::<std::net::IpAddr>().is_err() {
                return Err(invalid(format!(
                    "{ip} is not a valid IP or resolvable host."
                )));
            }
        }
        IP_KEYS
    } else {
        USER_CLIENT_KEYS
    };
    Ok((entity, keys))
}

/// Checks one key's new value as Kafka's `validateQuotaKeyValue` does.
pub fn validate_value(
    keys: &[(&'static str, ValueType)],
    key: &str,
    value: f64,
) -> Result<(), QuotaError> {
    let Some((_, ty)) = keys.iter().find(|(k, _)| *k == key) else {
        return Err(invalid(format!("Invalid configuration key {key}")));
    };
    // NaN is not > 0 either: never written.
    if value.is_nan() || value <= 0.0 {
        return Err(invalid(format!("Quota {key} must be greater than 0")));
    }
    let integral = |max: f64, what: &str| {
        if value > max {
            return Err(invalid(format!(
                "Proposed value for {key} is too large for {what}."
            )));
        }
        if (value % 1.0).abs() > 1e-6 {
            return Err(invalid(format!("{key} cannot be a fractional value.")));
        }
        Ok(())
    };
    match ty {
        ValueType::Double => {
            if value.is_finite() {
                Ok(())
            } else {
                Err(invalid(format!("Quota {key} must be a finite number")))
            }
        }
        ValueType::Int => integral(f64::from(i32::MAX), "an INT"),
        ValueType::Long => integral(i64::MAX as f64, "a LONG"),
    }
}

/// Each entity's result, in order of first appearance in the request.
pub type EntityResults = Vec<(Vec<(String, EntityName)>, Result<(), QuotaError>)>;

/// Checks a request and gives the records of the entities without an
/// error (none when `validate_only`) and each entity's result.
pub fn alter(
    image: &MetadataImage,
    alterations: &[QuotaAlteration],
    validate_only: bool,
) -> (Vec<MetadataRecord>, EntityResults) {
    let mut records = Vec::new();
    let mut results: EntityResults = Vec::new();
    // Kafka keys its results by entity: a pair list naming the same types
    // and names in another order is the same entity.
    let same = |a: &[(String, EntityName)], b: &[(String, EntityName)]| {
        let sort = |x: &[(String, EntityName)]| {
            let mut v = x.to_vec();
            v.sort();
            v
        };
        sort(a) == sort(b)
    };
    for alt in alterations {
        let mut changes: BTreeMap<&str, Option<f64>> = BTreeMap::new();
        let mut duplicate_key = false;
        for (k, v) in &alt.ops {
            if changes.contains_key(k.as_str()) {
                duplicate_key = true;
            } else {
                changes.insert(k, *v);
            }
        }
        if let Some(i) = results.iter().position(|(e, _)| same(e, &alt.entity)) {
            results[i].1 = Err(invalid(format!(
                "Ignoring duplicate entity {}",
                display(&alt.entity)
            )));
            continue;
        }
        if duplicate_key {
            results.push((
                alt.entity.clone(),
                Err(invalid(format!(
                    "Ignoring duplicate entity {}",
                    display(&alt.entity)
                ))),
            ));
            continue;
        }
        let result = entity_records(image, &alt.entity, &changes);
        match result {
            Ok(mut r) => {
                if !validate_only {
                    records.append(&mut r);
                }
                results.push((alt.entity.clone(), Ok(())));
            }
            Err(e) => results.push((alt.entity.clone(), Err(e))),
        }
    }
    (records, results)
}

fn entity_records(
    image: &MetadataImage,
    parts: &[(String, EntityName)],
    changes: &BTreeMap<&str, Option<f64>>,
) -> Result<Vec<MetadataRecord>, QuotaError> {
    let (entity, keys) = validate_entity(parts)?;
    let current = image.client_quotas.get(&entity);
    let record_entity: Vec<(String, EntityName)> = entity
        .parts()
        .into_iter()
        .map(|(t, n)| (t.to_string(), n))
        .collect();
    let mut out = Vec::new();
    for (key, value) in changes {
        let now = current.and_then(|m| m.get(*key));
        match value {
            None => {
                if now.is_some() {
                    out.push(MetadataRecord::ClientQuota {
                        entity: record_entity.clone(),
                        key: key.to_string(),
                        value: QuotaValue(0.0),
                        remove: true,
                    });
                }
            }
            Some(v) => {
                validate_value(keys, key, *v)?;
                if now != Some(&QuotaValue(*v)) {
                    out.push(MetadataRecord::ClientQuota {
                        entity: record_entity.clone(),
                        key: key.to_string(),
                        value: QuotaValue(*v),
                        remove: false,
                    });
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(n: Option<&str>) -> Vec<(String, EntityName)> {
        vec![(USER.to_string(), n.map(str::to_string))]
    }

    fn alt(entity: Vec<(String, EntityName)>, ops: &[(&str, Option<f64>)]) -> QuotaAlteration {
        QuotaAlteration {
            entity,
            ops: ops.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    fn err(r: &Result<(), QuotaError>) -> String {
        match r {
            Err(QuotaError::InvalidRequest(s)) => s.clone(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn set_change_and_remove() {
        let image = MetadataImage::empty("c".into());
        let a = alt(
            user(Some("alice")),
            &[
                ("producer_byte_rate", Some(1024.0)),
                ("request_percentage", Some(50.5)),
            ],
        );
        let (records, results) = alter(&image, std::slice::from_ref(&a), false);
        assert_eq!(records.len(), 2);
        assert!(results[0].1.is_ok());
        let (none, _) = alter(&image, std::slice::from_ref(&a), true);
        assert!(none.is_empty(), "validate_only writes nothing");
        let image = image.apply(1, &records);
        let e = QuotaEntity::from_parts(&user(Some("alice"))).unwrap();
        assert_eq!(
            image.client_quotas[&e]["producer_byte_rate"],
            QuotaValue(1024.0)
        );
        // The same values again: no record; removing an absent key: none.
        let (records, _) = alter(&image, &[a], false);
        assert!(records.is_empty());
        let (records, _) = alter(
            &image,
            &[alt(user(Some("alice")), &[("consumer_byte_rate", None)])],
            false,
        );
        assert!(records.is_empty());
        let (records, _) = alter(
            &image,
            &[alt(
                user(Some("alice")),
                &[("producer_byte_rate", None), ("request_percentage", None)],
            )],
            false,
        );
        let image = image.apply(2, &records);
        assert!(
            image.client_quotas.is_empty(),
            "an entity without keys is gone"
        );
    }

    #[test]
    fn kafkas_refusals() {
        let image = MetadataImage::empty("c".into());
        let p = |t: &str, n: Option<&str>| (t.to_string(), n.map(str::to_string));
        let cases: Vec<(QuotaAlteration, &str)> = vec![
            (alt(vec![], &[("producer_byte_rate", Some(1.0))]), "Invalid empty client quota entity"),
            (
                alt(vec![p("group", Some("g"))], &[("producer_byte_rate", Some(1.0))]),
                "Unhandled client quota entity type: group",
            ),
            (alt(user(Some("")), &[("producer_byte_rate", Some(1.0))]), "Empty user not supported"),
            (
                alt(vec![p("ip", Some("1.2.3.4")), p("user", Some("a"))], &[]),
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
            ),
            (
                alt(vec![p("ip", Some("nohost"))], &[]),
                "nohost is not a valid IP or resolvable host.",
            ),
            (alt(user(Some("a")), &[("foo", Some(1.0))]), "Invalid configuration key foo"),
            (
                alt(user(Some("a")), &[("producer_byte_rate", Some(0.0))]),
                "Quota producer_byte_rate must be greater than 0",
            ),
            (
                alt(user(Some("a")), &[("producer_byte_rate", Some(1.5))]),
                "producer_byte_rate cannot be a fractional value.",
            ),
            (
                alt(vec![p("ip", None)], &[("connection_creation_rate", Some(3e9))]),
                "Proposed value for connection_creation_rate is too large for an INT.",
            ),
            (
                alt(vec![p("ip", None)], &[("producer_byte_rate", Some(1.0))]),
                "Invalid configuration key producer_byte_rate",
            ),
            (
                alt(user(Some("a")), &[("connection_creation_rate", Some(1.0))]),
                "Invalid configuration key connection_creation_rate",
            ),
            (
                alt(
                    user(Some("a")),
                    &[("producer_byte_rate", Some(1.0)), ("producer_byte_rate", Some(2.0))],
                ),
                "Ignoring duplicate entity ClientQuotaEntity(entries={user=a})",
            ),
        ];
        for (a, text) in cases {
            let (records, results) = alter(&image, std::slice::from_ref(&a), false);
            assert!(records.is_empty(), "{a:?}");
            assert_eq!(err(&results[0].1), text, "{a:?}");
        }
        // The same entity twice: one result, refused; the first one's
        // records are written (as Kafka writes them).
        let a = alt(user(None), &[("consumer_byte_rate", Some(10.0))]);
        let (records, results) = alter(&image, &[a.clone(), a], false);
        assert_eq!(results.len(), 1);
        assert_eq!(
            err(&results[0].1),
            "Ignoring duplicate entity ClientQuotaEntity(entries={user=null})"
        );
        assert_eq!(records.len(), 1);
        // A default IP with a rate, and a user/client pair, are fine.
        let ok = [
            alt(
                vec![p("ip", None)],
                &[("connection_creation_rate", Some(10.0))],
            ),
            alt(
                vec![p("client-id", Some("c")), p("user", None)],
                &[("controller_mutation_rate", Some(0.5))],
            ),
        ];
        let (records, results) = alter(&image, &ok, false);
        assert_eq!(records.len(), 2);
        assert!(results.iter().all(|(_, r)| r.is_ok()), "{results:?}");
    }
}
