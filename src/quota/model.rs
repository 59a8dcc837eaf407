//! Client quotas as Kafka keeps them (KIP-546): an entity is a set of
//! (entity type, name) pairs, a name of None being the type's default;
//! each entity has values by key. The metadata image holds them as a
//! [`QuotaTable`]; [`QuotaTable::resolve`] finds the quota of a request by
//! Kafka's precedence (`ClientQuotaManager`'s default callback).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The entity type of a user (KafkaPrincipal name).
pub const USER: &str = "user";
/// The entity type of a client id.
pub const CLIENT_ID: &str = "client-id";
/// The entity type of a client IP address.
pub const IP: &str = "ip";

/// `producer_byte_rate`: bytes per second of Produce requests.
pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
/// `consumer_byte_rate`: bytes per second of Fetch responses.
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
/// `request_percentage`: percent of one thread's time per second.
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
/// `controller_mutation_rate`: partitions created or deleted per second.
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";
/// `connection_creation_rate`: connections per second from an IP.
pub const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// How a quota key's values are typed (Kafka's `QuotaConfig` definitions):
/// LONG and INT values must be whole numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// A 64-bit integer.
    Long,
    /// A 32-bit integer.
    Int,
    /// A double.
    Double,
}

/// The keys of user and client-id entities, with their types.
pub const USER_CLIENT_KEYS: &[(&str, ValueType)] = &[
    (PRODUCER_BYTE_RATE, ValueType::Long),
    (CONSUMER_BYTE_RATE, ValueType::Long),
    (REQUEST_PERCENTAGE, ValueType::Double),
    (CONTROLLER_MUTATION_RATE, ValueType::Double),
];

/// The keys of IP entities, with their types.
pub const IP_KEYS: &[(&str, ValueType)] = &[(CONNECTION_CREATION_RATE, ValueType::Int)];

/// A quota value. Values are checked to be finite and above 0 before they
/// are written, so comparing them bit for bit is equality.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QuotaValue(pub f64);

impl Eq for QuotaValue {}

/// One name of an entity: a given one, or the type's default.
pub type EntityName = Option<String>;

/// A quota entity, typed: which of user, client id and IP it names (an
/// inner None is that type's default). Ordered for the image's map; kept
/// in snapshots as Kafka's (type, name) pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(
    try_from = "Vec<(String, EntityName)>",
    into = "Vec<(String, EntityName)>"
)]
pub struct QuotaEntity {
    /// `user`, if part of the entity.
    pub user: Option<EntityName>,
    /// `client-id`, if part of the entity.
    pub client_id: Option<EntityName>,
    /// `ip`, if part of the entity.
    pub ip: Option<EntityName>,
}

impl QuotaEntity {
    /// The entity of Kafka's (type, name) pairs; None for an unknown type
    /// or a type named twice.
    pub fn from_parts(parts: &[(String, EntityName)]) -> Option<QuotaEntity> {
        let mut e = QuotaEntity::default();
        for (t, n) in parts {
            let slot = match t.as_str() {
                USER => &mut e.user,
                CLIENT_ID => &mut e.client_id,
                IP => &mut e.ip,
                _ => return None,
            };
            if slot.is_some() {
                return None;
            }
            *slot = Some(n.clone());
        }
        Some(e)
    }

    /// Kafka's (type, name) pairs, user first.
    pub fn parts(&self) -> Vec<(&'static str, EntityName)> {
        let mut out = Vec::with_capacity(2);
        if let Some(n) = &self.user {
            out.push((USER, n.clone()));
        }
        if let Some(n) = &self.client_id {
            out.push((CLIENT_ID, n.clone()));
        }
        if let Some(n) = &self.ip {
            out.push((IP, n.clone()));
        }
        out
    }

    /// How many types the entity names.
    pub fn len(&self) -> usize {
        self.user.is_some() as usize
            + self.client_id.is_some() as usize
            + self.ip.is_some() as usize
    }

    /// Whether it names no type.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name of `entity_type` in this entity: None when the type is not
    /// part of it, Some(None) for its default.
    pub fn get(&self, entity_type: &str) -> Option<&EntityName> {
        match entity_type {
            USER => self.user.as_ref(),
            CLIENT_ID => self.client_id.as_ref(),
            IP => self.ip.as_ref(),
            _ => None,
        }
    }

    /// As Kafka's `ClientQuotaEntity.toString` shows it, for messages.
    pub fn display(&self) -> String {
        let inner: Vec<String> = self
            .parts()
            .into_iter()
            .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("null")))
            .collect();
        format!("ClientQuotaEntity(entries={{{}}})", inner.join(", "))
    }
}

impl TryFrom<Vec<(String, EntityName)>> for QuotaEntity {
    type Error = String;
    fn try_from(parts: Vec<(String, EntityName)>) -> Result<QuotaEntity, String> {
        QuotaEntity::from_parts(&parts).ok_or_else(|| format!("not a quota entity: {parts:?}"))
    }
}

impl From<QuotaEntity> for Vec<(String, EntityName)> {
    fn from(e: QuotaEntity) -> Vec<(String, EntityName)> {
        e.parts()
            .into_iter()
            .map(|(t, n)| (t.to_string(), n))
            .collect()
    }
}

/// The quotas of the metadata image: entity → key → value.
pub type QuotaTable = BTreeMap<QuotaEntity, BTreeMap<String, QuotaValue>>;

/// What a request's usage is counted against: Kafka's quota metric tags
/// (user, client id), "" where the matched entity leaves the type out. All
/// requests of one key share one rate.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SensorKey {
    /// The user, or "".
    pub user: String,
    /// The client id, or "".
    pub client_id: String,
}

/// A request's quota for one key: the limit and what it is counted
/// against.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The configured limit (per broker).
    pub limit: f64,
    /// The rate it is counted in.
    pub sensor: SensorKey,
}

fn named(n: &str) -> Option<EntityName> {
    Some(Some(n.to_string()))
}

const DEFAULT: Option<EntityName> = Some(None);

/// The quota of `key` for a request of `user` (the principal's name) with
/// `client_id`, by Kafka's precedence: /users/<user>/clients/<client-id>,
/// /users/<user>/clients/<default>, /users/<user>,
/// /users/<default>/clients/<client-id>,
/// /users/<default>/clients/<default>, /users/<default>,
/// /clients/<client-id>, /clients/<default>. None: unlimited.
pub fn resolve(table: &QuotaTable, key: &str, user: &str, client_id: &str) -> Option<Resolved> {
    if table.is_empty() {
        return None;
    }
    let both = || SensorKey {
        user: user.to_string(),
        client_id: client_id.to_string(),
    };
    let user_only = || SensorKey {
        user: user.to_string(),
        client_id: String::new(),
    };
    let client_only = || SensorKey {
        user: String::new(),
        client_id: client_id.to_string(),
    };
    type Level = (Option<EntityName>, Option<EntityName>, u8);
    // (user part, client part, 0: both tags, 1: the user's, 2: the client's)
    let levels: [Level; 8] = [
        (named(user), named(client_id), 0),
        (named(user), DEFAULT, 0),
        (named(user), None, 1),
        (DEFAULT, named(client_id), 0),
        (DEFAULT, DEFAULT, 0),
        (DEFAULT, None, 1),
        (None, named(client_id), 2),
        (None, DEFAULT, 2),
    ];
    for (u, c, tags) in levels {
        let entity = QuotaEntity {
            user: u,
            client_id: c,
            ip: None,
        };
        if let Some(v) = table.get(&entity).and_then(|m| m.get(key)) {
            let sensor = match tags {
                0 => both(),
                1 => user_only(),
                _ => client_only(),
            };
            return Some(Resolved { limit: v.0, sensor });
        }
    }
    None
}

/// The user of a principal as quotas name it: the name after the type
/// (`User:alice` → `alice`, `User:ANONYMOUS` → `ANONYMOUS`).
pub fn user_of(principal: &str) -> &str {
    principal.split_once(':').map_or(principal, |(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(user: Option<EntityName>, client: Option<EntityName>) -> QuotaEntity {
        QuotaEntity {
            user,
            client_id: client,
            ip: None,
        }
    }

    fn set(t: &mut QuotaTable, e: QuotaEntity, v: f64) {
        t.entry(e)
            .or_default()
            .insert(PRODUCER_BYTE_RATE.into(), QuotaValue(v));
    }

    /// Each level wins over every later one, and the rate it is counted
    /// in is Kafka's metric tags for that level.
    #[test]
    fn precedence_is_kafkas() {
        let s = |x: &str| Some(Some(x.to_string()));
        let levels = [
            entity(s("alice"), s("app")),
            entity(s("alice"), DEFAULT),
            entity(s("alice"), None),
            entity(DEFAULT, s("app")),
            entity(DEFAULT, DEFAULT),
            entity(DEFAULT, None),
            entity(None, s("app")),
            entity(None, DEFAULT),
        ];
        let tags = [
            ("alice", "app"),
            ("alice", "app"),
            ("alice", ""),
            ("alice", "app"),
            ("alice", "app"),
            ("alice", ""),
            ("", "app"),
            ("", "app"),
        ];
        for (first, tag) in tags.iter().enumerate() {
            let mut t = QuotaTable::new();
            for (i, e) in levels.iter().enumerate().skip(first) {
                set(&mut t, e.clone(), (i + 1) as f64);
            }
            let r = resolve(&t, PRODUCER_BYTE_RATE, "alice", "app").unwrap();
            assert_eq!(r.limit, (first + 1) as f64, "level {first}");
            assert_eq!((r.sensor.user.as_str(), r.sensor.client_id.as_str()), *tag);
        }
        // Another user and client see only the defaults.
        let mut t = QuotaTable::new();
        set(&mut t, levels[0].clone(), 1.0);
        set(&mut t, levels[2].clone(), 2.0);
        assert_eq!(resolve(&t, PRODUCER_BYTE_RATE, "bob", "x"), None);
        assert_eq!(resolve(&t, CONSUMER_BYTE_RATE, "alice", "app"), None);
        set(&mut t, levels[5].clone(), 6.0);
        assert_eq!(
            resolve(&t, PRODUCER_BYTE_RATE, "bob", "x").unwrap().limit,
            6.0
        );
    }

    #[test]
    fn entities_from_kafkas_pairs() {
        let p = |t: &str, n: Option<&str>| (t.to_string(), n.map(str::to_string));
        let e = QuotaEntity::from_parts(&[p("client-id", None), p("user", Some("a"))]).unwrap();
        assert_eq!(e.user, Some(Some("a".into())));
        assert_eq!(e.client_id, Some(None));
        assert_eq!(
            e.display(),
            "ClientQuotaEntity(entries={user=a, client-id=null})"
        );
        assert_eq!(QuotaEntity::from_parts(&[p("group", Some("g"))]), None);
        assert_eq!(
            QuotaEntity::from_parts(&[p("user", Some("a")), p("user", None)]),
            None
        );
        assert_eq!(user_of("User:ANONYMOUS"), "ANONYMOUS");
        assert_eq!(user_of("User:CN=a,O=b"), "CN=a,O=b");
    }
}
