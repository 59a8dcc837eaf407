//! The client side of a connection as Kafka's client properties describe it
//! (`--command-config FILE` of the operator commands, the file Kafka's own
//! tools take): `security.protocol`, `sasl.mechanism`, `sasl.jaas.config`
//! (the login module's `username` and `password`, or
//! `unsecuredLoginStringClaim_sub` for OAUTHBEARER), and the `ssl.*`
//! truststore / keystore keys in the forms the broker reads (PEM files or
//! inline PEM; `ssl.endpoint.identification.algorithm=` empty to skip the
//! host name check).

use std::collections::BTreeMap;

use super::{client_sasl, mechanism_named, tls, ClientSasl, ClientSecurity, SecurityError};
use crate::config::SecurityProtocol;

/// Takes client properties (key, value; a later key wins); gives the
/// security of a connection made with them. Errors name the key at fault:
/// an unknown `security.protocol` or `sasl.mechanism`, a SASL protocol
/// without `sasl.mechanism` (Kafka's default, GSSAPI, is not supported) or
/// without a `sasl.jaas.config` holding the credentials, a TLS protocol
/// without a truststore, or unreadable stores.
pub fn client_security(props: &[(String, String)]) -> Result<ClientSecurity, SecurityError> {
    let map: BTreeMap<&str, &str> = props.iter().map(|(k, v)| (k.trim(), v.trim())).collect();
    let protocol = match map.get("security.protocol") {
        None => SecurityProtocol::Plaintext,
        Some(p) => SecurityProtocol::from_name(p).ok_or_else(|| SecurityError::Invalid {
            key: "security.protocol".into(),
            value: p.to_string(),
            allowed: "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL".into(),
        })?,
    };
    let get = |k: &str| map.get(k).map(|v| (k.to_string(), v.to_string()));
    let tls = match protocol {
        SecurityProtocol::Ssl | SecurityProtocol::SaslSsl => {
            // Kafka's clients read a store without a type as JKS: the type
            // must be written for the same file to serve Kafka's tools.
            for store in ["truststore", "keystore"] {
                let given = [
                    format!("ssl.{store}.location"),
                    format!("ssl.{store}.certificates"),
                    format!("ssl.{store}.certificate.chain"),
                ]
                .iter()
                .any(|k| map.contains_key(k.as_str()));
                let typed = format!("ssl.{store}.type");
                if given && !map.contains_key(typed.as_str()) {
                    return Err(SecurityError::Missing {
                        key: typed,
                        why: "PEM (Kafka's tools read a store without a type as JKS, so the same file would not serve them)".into(),
                    });
                }
            }
            let config = tls::client_config("the command's connection", &get).map_err(|e| match e {
                tls::TlsError::Missing { key, .. } if key == "ssl.truststore.location" => {
                    SecurityError::Missing {
                        key,
                        why: "the CAs that signed the broker's certificate (PEM; or ssl.truststore.certificates with the PEM text), with ssl.truststore.type=PEM".into(),
                    }
                }
                other => other.into(),
            })?;
            Some(config)
        }
        _ => None,
    };
    let sasl = match protocol {
        SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => Some(sasl(&map)?),
        _ => None,
    };
    Ok(ClientSecurity {
        listener: String::new(),
        protocol,
        tls,
        sasl,
    })
}

/// The mechanism and credentials of `sasl.mechanism` and `sasl.jaas.config`.
fn sasl(map: &BTreeMap<&str, &str>) -> Result<ClientSasl, SecurityError> {
    let Some(name) = map.get("sasl.mechanism").copied() else {
        return Err(SecurityError::Missing {
            key: "sasl.mechanism".into(),
            why: format!(
                "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (Kafka's default, {}, is not supported)",
                super::KAFKA_DEFAULT_MECHANISM
            ),
        });
    };
    let mechanism = mechanism_named("sasl.mechanism", name)?;
    let key = "sasl.jaas.config";
    let line = map.get(key).ok_or_else(|| SecurityError::Missing {
        key: key.into(),
        why: format!("the {name} login module line with the user's credentials"),
    })?;
    client_sasl(mechanism, key, line, "the user's")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn plaintext_without_properties() {
        let s = client_security(&[]).unwrap();
        assert_eq!(s.protocol, SecurityProtocol::Plaintext);
        assert!(s.tls.is_none() && s.sasl.is_none());
    }

    #[test]
    fn sasl_plaintext_with_scram() {
        let s = client_security(&props(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"pw\";",
            ),
        ]))
        .unwrap();
        let sasl = s.sasl.unwrap();
        assert_eq!(sasl.username, "alice");
        assert_eq!(sasl.password, "pw");
        assert_eq!(sasl.mechanism.name(), "SCRAM-SHA-512");
    }

    #[test]
    fn errors_name_the_key() {
        let e = client_security(&props(&[("security.protocol", "SASL_PLAINTEXT")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("sasl.mechanism") && e.contains("GSSAPI"), "{e}");
        let e = client_security(&props(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(e.contains("sasl.jaas.config"), "{e}");
        let e = client_security(&props(&[("security.protocol", "SSL")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("ssl.truststore"), "{e}");
        let e = client_security(&props(&[("security.protocol", "TLS")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("security.protocol"), "{e}");
    }
}
