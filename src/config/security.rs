//! The security keys as given: Kafka's `ssl.*`, `sasl.*` and
//! authentication keys, broker-wide and per listener
//! (`listener.name.<listener>.<key>`, the listener's value winning, as in
//! Kafka). They are kept as text here; `security::Security::from_config`
//! reads the files they name and checks them when the broker starts, and
//! refuses to start with a message naming the key (and the file).

use std::collections::BTreeMap;

/// The broker-wide security keys Fjord reads (any other `ssl.` or `sasl.`
/// key is accepted and logged as unused, as Kafka logs unknown keys).
pub const SECURITY_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.cipher.suites",
    "ssl.principal.mapping.rules",
    "ssl.endpoint.identification.algorithm",
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "sasl.mechanism.inter.broker.protocol",
    "sasl.mechanism.controller.protocol",
    "security.inter.broker.protocol",
    "connections.max.reauth.ms",
    "sasl.server.max.receive.size",
    "connection.failed.authentication.delay.ms",
    "super.users",
    "authorizer.class.name",
    "allow.everyone.if.no.acl.found",
];

/// The security keys given, as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecuritySettings {
    /// Broker-wide keys (one of [`SECURITY_KEYS`]), as given.
    pub broker: BTreeMap<String, String>,
    /// `listener.name.<LISTENER>.<key>`: by listener name (upper-cased),
    /// then the rest of the key (`ssl.keystore.location`,
    /// `scram-sha-512.sasl.jaas.config`, `sasl.enabled.mechanisms`, …).
    pub per_listener: BTreeMap<String, BTreeMap<String, String>>,
}

/// Takes a security key (broker-wide or the rest of a per-listener key);
/// gives whether Kafka types it PASSWORD, so that DescribeConfigs reports it
/// as sensitive, without its value.
pub fn is_sensitive(key: &str) -> bool {
    [
        "password",
        "jaas.config",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
        "secret",
    ]
    .iter()
    .any(|end| key.ends_with(end))
}

impl SecuritySettings {
    /// Every security key given (broker-wide, then `listener.name.<l>.…`
    /// with the listener name lower-cased, as Kafka describes them), with
    /// its value and whether it is sensitive ([`is_sensitive`]).
    pub fn given(&self) -> Vec<(String, String, bool)> {
        let broker = self
            .broker
            .iter()
            .map(|(k, v)| (k.clone(), v.clone(), is_sensitive(k)));
        let listeners = self.per_listener.iter().flat_map(|(l, keys)| {
            keys.iter().map(move |(k, v)| {
                (
                    format!("listener.name.{}.{k}", l.to_ascii_lowercase()),
                    v.clone(),
                    is_sensitive(k),
                )
            })
        });
        broker.chain(listeners).collect()
    }

    /// Takes a key and value; stores it and gives true when it is a
    /// security key (broker-wide or per listener).
    pub fn set(&mut self, key: &str, value: &str) -> bool {
        if let Some(rest) = key.strip_prefix("listener.name.") {
            if let Some((listener, k)) = rest.split_once('.') {
                if !listener.is_empty() && !k.is_empty() {
                    self.per_listener
                        .entry(listener.to_ascii_uppercase())
                        .or_default()
                        .insert(k.to_string(), value.trim().to_string());
                    return true;
                }
            }
            return false;
        }
        if SECURITY_KEYS.contains(&key) || key.starts_with("sasl.oauthbearer.") {
            self.broker
                .insert(key.to_string(), value.trim().to_string());
            return true;
        }
        false
    }

    /// The value of `key` for `listener`: its `listener.name.` value, else
    /// the broker-wide one. Gives the key as it was written, for messages.
    pub fn get(&self, listener: &str, key: &str) -> Option<(String, &str)> {
        if let Some(v) = self
            .per_listener
            .get(&listener.to_ascii_uppercase())
            .and_then(|m| m.get(key))
        {
            return Some((
                format!("listener.name.{}.{key}", listener.to_ascii_lowercase()),
                v.as_str(),
            ));
        }
        self.broker.get(key).map(|v| (key.to_string(), v.as_str()))
    }

    /// The JAAS line of `mechanism` on `listener`:
    /// `listener.name.<l>.<mechanism, lower-case>.sasl.jaas.config`, else
    /// the broker's `sasl.jaas.config`; with the key it came from.
    pub fn jaas(&self, listener: &str, mechanism: &str) -> Option<(String, &str)> {
        let k = format!("{}.sasl.jaas.config", mechanism.to_ascii_lowercase());
        if let Some(v) = self
            .per_listener
            .get(&listener.to_ascii_uppercase())
            .and_then(|m| m.get(&k))
        {
            return Some((
                format!("listener.name.{}.{k}", listener.to_ascii_lowercase()),
                v.as_str(),
            ));
        }
        self.get(listener, "sasl.jaas.config")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listener_values_win_over_the_broker_ones() {
        let mut s = SecuritySettings::default();
        assert!(s.set("ssl.keystore.location", "/b.pem"));
        assert!(s.set("listener.name.client.ssl.keystore.location", "/c.pem"));
        assert!(s.set(
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
            "M required;"
        ));
        assert!(!s.set("listener.name.x", "v"));
        assert!(!s.set("log.dirs", "/d"));
        assert_eq!(
            s.get("CLIENT", "ssl.keystore.location"),
            Some((
                "listener.name.client.ssl.keystore.location".into(),
                "/c.pem"
            ))
        );
        assert_eq!(
            s.get("OTHER", "ssl.keystore.location"),
            Some(("ssl.keystore.location".into(), "/b.pem"))
        );
        assert_eq!(
            s.jaas("SASL_SSL", "SCRAM-SHA-512").map(|(_, v)| v),
            Some("M required;")
        );
        assert_eq!(s.jaas("SASL_SSL", "PLAIN"), None);
    }
}
