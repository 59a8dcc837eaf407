//! Security as Kafka defines it: each listener's protocol (PLAINTEXT, SSL,
//! SASL_PLAINTEXT, SASL_SSL from `listener.security.protocol.map`), its
//! TLS settings ([`tls`]), its SASL mechanisms ([`sasl`], [`scram`],
//! [`jaas`]), who a connection is ([`principal`]), and how this broker
//! connects to other brokers and to the controllers.
//!
//! [`Security::from_config`] reads and checks everything at start: a key
//! with a bad value, an unreadable file, a malformed JAAS line or a
//! mechanism this broker cannot serve stops the broker with a message
//! naming the key (and the file). Nothing here does I/O after that, so the
//! connection code on the shards only reads these immutable settings.

pub mod client_props;
pub mod jaas;
pub mod oauth;
pub mod principal;
pub mod sasl;
pub mod scram;
pub mod session;
pub mod tls;

use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, SecurityProtocol};
use jaas::{JaasConfig, JaasError};
use oauth::{ClaimRules, JwksError, JwksFile, JwksValidator};
use principal::{KafkaPrincipal, PrincipalRules, RuleError};
use sasl::{Mechanism, OAuthValidator, SaslServerConfig, UnsecuredValidator};
use tls::TlsError;

/// Why the security settings stop the broker at start.
#[derive(Debug, thiserror::Error)]
pub enum SecurityError {
    /// The TLS settings of a listener or of this broker as a client.
    #[error("{0}")]
    Tls(#[from] TlsError),
    /// A key has a value this broker does not take.
    #[error("invalid value {value:?} for {key}: {allowed}")]
    Invalid {
        /// The key as written.
        key: String,
        /// The value (never a secret).
        value: String,
        /// What is allowed.
        allowed: String,
    },
    /// A key this configuration needs is not set.
    #[error("{key} must be set: {why}")]
    Missing {
        /// The key.
        key: String,
        /// Why it is needed.
        why: String,
    },
    /// A JAAS line does not parse.
    #[error("{key}: {source}")]
    Jaas {
        /// The key holding the line.
        key: String,
        /// What is wrong (never a value).
        source: JaasError,
    },
    /// The JWKS of `sasl.oauthbearer.jwks.endpoint.url` cannot be used.
    #[error("{key}: the JWKS file {file}: {source}")]
    Jwks {
        /// The key naming the URL.
        key: String,
        /// The file.
        file: String,
        /// What is wrong.
        source: JwksError,
    },
    /// `ssl.principal.mapping.rules` does not parse.
    #[error("{key}: {source}")]
    Rules {
        /// The key.
        key: String,
        /// What is wrong.
        source: RuleError,
    },
}

/// The security of one listener, built at start.
#[derive(Debug)]
pub struct ListenerSecurity {
    /// The listener's name (upper-cased, as in `listeners`).
    pub name: String,
    /// Its security protocol.
    pub protocol: SecurityProtocol,
    /// Its TLS server configuration (SSL and SASL_SSL).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Its SASL settings (SASL_PLAINTEXT and SASL_SSL).
    pub sasl: Option<Arc<SaslServerConfig>>,
    /// `ssl.principal.mapping.rules` of the listener.
    pub principal_rules: Arc<PrincipalRules>,
    /// `sasl.server.max.receive.size`: the largest frame accepted before a
    /// SASL connection has authenticated (bytes; Kafka's 524288).
    pub max_receive_size: usize,
    /// `connection.failed.authentication.delay.ms`: how long a connection
    /// whose authentication failed is held before it is closed.
    pub failed_auth_delay: Duration,
    /// Whether it is a controller listener (`controller.listener.names`).
    pub controller: bool,
}

/// How this broker connects to a listener of other brokers (or the
/// controllers): the protocol and what it authenticates with.
#[derive(Debug, Clone)]
pub struct ClientSecurity {
    /// The listener name it connects to on the other side.
    pub listener: String,
    /// The listener's protocol.
    pub protocol: SecurityProtocol,
    /// The TLS client configuration (SSL and SASL_SSL).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The SASL mechanism and credentials (SASL_PLAINTEXT and SASL_SSL).
    pub sasl: Option<ClientSasl>,
}

impl ClientSecurity {
    /// Plain TCP without authentication to listener `listener`.
    pub fn plaintext(listener: &str) -> ClientSecurity {
        ClientSecurity {
            listener: listener.to_string(),
            protocol: SecurityProtocol::Plaintext,
            tls: None,
            sasl: None,
        }
    }
}

/// A SASL client's mechanism and credentials (from the JAAS line's
/// `username` and `password`; OAUTHBEARER: an unsecured token for
/// `unsecuredLoginStringClaim_sub`).
#[derive(Clone)]
pub struct ClientSasl {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// The user name.
    pub username: String,
    /// The password (never logged).
    pub password: String,
}

impl std::fmt::Debug for ClientSasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSasl")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// Every listener's security and this broker's client side, built once at
/// start and shared (read-only) by every shard.
#[derive(Debug)]
pub struct Security {
    /// One per listener of `listeners`, in that order.
    pub listeners: Vec<Arc<ListenerSecurity>>,
    /// `super.users`.
    pub super_users: Vec<KafkaPrincipal>,
    /// How this broker reaches the other brokers (replica fetchers, remote
    /// coordinator calls): `inter.broker.listener.name` or
    /// `security.inter.broker.protocol`.
    pub inter_broker: ClientSecurity,
    /// How this broker reaches the controllers' listener
    /// (`controller.listener.names`, `sasl.mechanism.controller.protocol`).
    pub controller: Option<ClientSecurity>,
    /// The authorizer (`authorizer.class.name`): None when not configured
    /// (every request allowed, the ACL APIs answer SECURITY_DISABLED);
    /// Some(`allow.everyone.if.no.acl.found`) with Kafka's
    /// StandardAuthorizer.
    pub authorizer: Option<bool>,
}

/// The `authorizer.class.name` values that turn on Kafka's
/// StandardAuthorizer rules (Kafka's class, or Fjord's own name for it).
pub const STANDARD_AUTHORIZERS: &[&str] = &[
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "fjord.StandardAuthorizer",
];

/// Who sent a request and on which listener: what handlers (and the
/// authorizer) need of a connection. Shared by the connection's requests
/// until the session's principal changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestContext {
    /// The listener's name.
    pub listener: Arc<str>,
    /// The listener's security protocol.
    pub protocol: SecurityProtocol,
    /// The connection's principal.
    pub principal: KafkaPrincipal,
}

/// Kafka's default for `sasl.enabled.mechanisms` and the inter-broker and
/// controller mechanisms: GSSAPI, which Fjord does not serve.
const KAFKA_DEFAULT_MECHANISM: &str = "GSSAPI";

fn parse_num<T: std::str::FromStr>(
    get: &dyn Fn(&str) -> Option<(String, String)>,
    key: &str,
    default: T,
    allowed: &str,
) -> Result<T, SecurityError> {
    match get(key) {
        None => Ok(default),
        Some((k, v)) => v.trim().parse().map_err(|_| SecurityError::Invalid {
            key: k,
            value: v,
            allowed: allowed.to_string(),
        }),
    }
}

fn mechanism_named(key: &str, name: &str) -> Result<Mechanism, SecurityError> {
    Mechanism::from_name(name).ok_or_else(|| SecurityError::Invalid {
        key: key.to_string(),
        value: name.to_string(),
        allowed: if name == KAFKA_DEFAULT_MECHANISM {
            format!("PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (GSSAPI/Kerberos is not supported; Kafka's default is {KAFKA_DEFAULT_MECHANISM}, so set {key})")
        } else {
            "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER".to_string()
        },
    })
}

impl Security {
    /// Reads and checks every security setting of `c` (files included).
    /// Errors name the key (and the file) to fix.
    pub fn from_config(c: &Config) -> Result<Security, SecurityError> {
        let s = &c.security;
        let mut secret = uuid::Uuid::new_v4().as_bytes().to_vec();
        secret.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        let mut listeners = Vec::new();
        for l in &c.listeners {
            let name = l.name.clone();
            let protocol = c
                .kraft
                .protocol_of(&name)
                .unwrap_or(SecurityProtocol::Plaintext);
            let get = |k: &str| s.get(&name, k).map(|(key, v)| (key, v.to_string()));
            let tls = match protocol {
                SecurityProtocol::Ssl | SecurityProtocol::SaslSsl => {
                    Some(tls::server_config(&name, &get)?)
                }
                _ => None,
            };
            let sasl = match protocol {
                SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => {
                    Some(Arc::new(sasl_server(c, &name, &get, &secret)?))
                }
                _ => None,
            };
            let principal_rules = match get("ssl.principal.mapping.rules") {
                None => PrincipalRules::default(),
                Some((key, v)) => PrincipalRules::parse(&v)
                    .map_err(|source| SecurityError::Rules { key, source })?,
            };
            listeners.push(Arc::new(ListenerSecurity {
                controller: c.kraft.is_controller_listener(&name),
                name: name.clone(),
                protocol,
                tls,
                sasl,
                principal_rules: Arc::new(principal_rules),
                max_receive_size: parse_num(
                    &get,
                    "sasl.server.max.receive.size",
                    524_288usize,
                    "a size in bytes",
                )?,
                failed_auth_delay: Duration::from_millis(parse_num(
                    &get,
                    "connection.failed.authentication.delay.ms",
                    100u64,
                    "a non-negative number of milliseconds",
                )?),
            }));
        }
        let super_users = match s.broker.get("super.users") {
            None => Vec::new(),
            Some(v) => v
                .split(';')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| {
                    KafkaPrincipal::parse(p).ok_or_else(|| SecurityError::Invalid {
                        key: "super.users".into(),
                        value: p.to_string(),
                        allowed: "a ';'-separated list of Type:name principals (User:admin)".into(),
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        let inter_broker = inter_broker_client(c, &secret)?;
        let controller = match c.kraft.controller_listener_names.first() {
            Some(name) if c.controller_listener().is_some() || !c.kraft.voters.is_empty() => {
                Some(client_side(c, name, "sasl.mechanism.controller.protocol")?)
            }
            _ => None,
        };
        let authorizer = match s.broker.get("authorizer.class.name").map(|v| v.trim()) {
            None | Some("") => None,
            Some(v) if STANDARD_AUTHORIZERS.contains(&v) => {
                Some(match s.broker.get("allow.everyone.if.no.acl.found") {
                    None => false,
                    Some(b) => match b.trim().to_ascii_lowercase().as_str() {
                        "true" => true,
                        "false" => false,
                        _ => {
                            return Err(SecurityError::Invalid {
                                key: "allow.everyone.if.no.acl.found".into(),
                                value: b.clone(),
                                allowed: "true or false".into(),
                            })
                        }
                    },
                })
            }
            Some(v) => {
                return Err(SecurityError::Invalid {
                    key: "authorizer.class.name".into(),
                    value: v.to_string(),
                    allowed: format!("empty, or {}", STANDARD_AUTHORIZERS.join(" or ")),
                })
            }
        };
        Ok(Security {
            listeners,
            super_users,
            inter_broker,
            controller,
            authorizer,
        })
    }

    /// The security of listener `name`.
    pub fn listener(&self, name: &str) -> Option<&Arc<ListenerSecurity>> {
        self.listeners.iter().find(|l| l.name == name)
    }

    /// Whether `p` is one of `super.users`.
    pub fn is_super_user(&self, p: &KafkaPrincipal) -> bool {
        self.super_users.iter().any(|s| s == p)
    }
}

/// The SASL settings of SASL listener `name`.
fn sasl_server(
    c: &Config,
    name: &str,
    get: &dyn Fn(&str) -> Option<(String, String)>,
    secret: &[u8],
) -> Result<SaslServerConfig, SecurityError> {
    let (key, list) = get("sasl.enabled.mechanisms").unwrap_or_else(|| {
        (
            "sasl.enabled.mechanisms".into(),
            KAFKA_DEFAULT_MECHANISM.into(),
        )
    });
    let mut mechanisms = Vec::new();
    for m in list.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        mechanisms.push(mechanism_named(&key, m)?);
    }
    if mechanisms.is_empty() {
        return Err(SecurityError::Invalid {
            key,
            value: list,
            allowed: "at least one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER".into(),
        });
    }
    let jaas = |mech: &str| -> Result<Option<(String, JaasConfig)>, SecurityError> {
        match c.security.jaas(name, mech) {
            None => Ok(None),
            Some((key, line)) => JaasConfig::parse(line)
                .map(|j| Some((key.clone(), j)))
                .map_err(|source| SecurityError::Jaas { key, source }),
        }
    };
    let mut plain_users = Default::default();
    if mechanisms.contains(&Mechanism::Plain) {
        let Some((_, j)) = jaas("PLAIN")? else {
            return Err(SecurityError::Missing {
                key: format!(
                    "listener.name.{}.plain.sasl.jaas.config",
                    name.to_ascii_lowercase()
                ),
                why: "PLAIN checks passwords against its user_<name>=\"password\" entries".into(),
            });
        };
        plain_users = j.plain_users();
    }
    let oauth = if mechanisms.contains(&Mechanism::OAuthBearer) {
        oauth_validator(name, get, jaas("OAUTHBEARER")?)?
    } else {
        OAuthValidator::default()
    };
    let max_reauth_ms = parse_num(
        get,
        "connections.max.reauth.ms",
        0i64,
        "a non-negative number of milliseconds",
    )?;
    Ok(SaslServerConfig {
        mechanisms,
        plain_users,
        oauth,
        max_reauth_ms: max_reauth_ms.max(0),
        fake_salt_secret: secret.to_vec(),
    })
}

/// The OAUTHBEARER validator of SASL listener `name`: Kafka's unsecured
/// one (its JAAS options `unsecuredValidatorPrincipalClaimName` and
/// `unsecuredValidatorAllowableClockSkewMs`) unless
/// `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class` names
/// Kafka's `OAuthBearerValidatorCallbackHandler`; then the JWKS file of
/// `sasl.oauthbearer.jwks.endpoint.url` is read now (and again every
/// `sasl.oauthbearer.jwks.endpoint.refresh.ms` on its own thread) and the
/// claims checked by the other `sasl.oauthbearer.*` keys.
fn oauth_validator(
    name: &str,
    get: &dyn Fn(&str) -> Option<(String, String)>,
    jaas: Option<(String, JaasConfig)>,
) -> Result<OAuthValidator, SecurityError> {
    let class = get("oauthbearer.sasl.server.callback.handler.class");
    let jwks = match &class {
        None => false,
        Some((_, v)) if v.trim() == oauth::UNSECURED_HANDLER => false,
        Some((_, v)) if v.trim() == oauth::VALIDATOR_HANDLER => true,
        Some((key, v)) => {
            return Err(SecurityError::Invalid {
                key: key.clone(),
                value: v.clone(),
                allowed: format!(
                    "{} (signed tokens checked against a JWKS) or {} (alg none tokens)",
                    oauth::VALIDATOR_HANDLER,
                    oauth::UNSECURED_HANDLER
                ),
            })
        }
    };
    if !jwks {
        if let Some((key, _)) = get("sasl.oauthbearer.jwks.endpoint.url") {
            log::warn!(
                "{key} is not used on listener {name}: without \
                 listener.name.{}.oauthbearer.sasl.server.callback.handler.class={} \
                 OAUTHBEARER takes Kafka's unsecured (alg none) tokens",
                name.to_ascii_lowercase(),
                oauth::VALIDATOR_HANDLER
            );
        }
        let mut u = UnsecuredValidator::default();
        if let Some((key, j)) = jaas {
            if let Some(claim) = j.options.get("unsecuredValidatorPrincipalClaimName") {
                u.principal_claim = claim.clone();
            }
            if let Some(skew) = j.options.get("unsecuredValidatorAllowableClockSkewMs") {
                u.clock_skew_ms = skew.parse().map_err(|_| SecurityError::Invalid {
                    key,
                    value: skew.clone(),
                    allowed: "unsecuredValidatorAllowableClockSkewMs in milliseconds".into(),
                })?;
            }
        }
        return Ok(OAuthValidator::Unsecured(u));
    }
    let Some((url_key, url)) = get("sasl.oauthbearer.jwks.endpoint.url") else {
        return Err(SecurityError::Missing {
            key: "sasl.oauthbearer.jwks.endpoint.url".into(),
            why: format!(
                "{} checks tokens against the keys of this file:// URL",
                oauth::VALIDATOR_HANDLER
            ),
        });
    };
    let path = match url.trim().strip_prefix("file://") {
        Some(p) if p.starts_with('/') => std::path::PathBuf::from(p),
        _ => {
            return Err(SecurityError::Invalid {
                key: url_key,
                value: url,
                allowed: "a file:// URL with an absolute path (file:///etc/fjord/jwks.json); \
                          http(s) endpoints are not fetched by Fjord: save the identity \
                          provider's JWKS to a file (docs/decisions/oauth-jwks-https.md)"
                    .into(),
            })
        }
    };
    let file = JwksFile {
        key: url_key.clone(),
        path,
    };
    let keys = file.load().map_err(|source| SecurityError::Jwks {
        key: url_key.clone(),
        file: file.path.display().to_string(),
        source,
    })?;
    let mut rules = ClaimRules::default();
    if let Some((_, v)) = get("sasl.oauthbearer.expected.audience") {
        rules.expected_audience = v
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
    }
    rules.expected_issuer = get("sasl.oauthbearer.expected.issuer")
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty());
    for (key, field) in [
        ("sasl.oauthbearer.sub.claim.name", &mut rules.sub_claim),
        ("sasl.oauthbearer.scope.claim.name", &mut rules.scope_claim),
    ] {
        if let Some((k, v)) = get(key) {
            if v.trim().is_empty() {
                return Err(SecurityError::Invalid {
                    key: k,
                    value: v,
                    allowed: "a claim name".into(),
                });
            }
            *field = v.trim().to_string();
        }
    }
    let skew_s: u32 = parse_num(
        get,
        "sasl.oauthbearer.clock.skew.seconds",
        30,
        "a non-negative number of seconds",
    )?;
    rules.clock_skew_ms = i64::from(skew_s) * 1000;
    let refresh_ms: u64 = parse_num(
        get,
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        3_600_000,
        "a positive number of milliseconds",
    )?;
    if refresh_ms == 0 {
        return Err(SecurityError::Invalid {
            key: "sasl.oauthbearer.jwks.endpoint.refresh.ms".into(),
            value: "0".into(),
            allowed: "a positive number of milliseconds".into(),
        });
    }
    log::info!(
        "listener {name}: OAUTHBEARER tokens checked against {} key(s) of {} ({url_key})",
        keys.len(),
        file.path.display()
    );
    let v = Arc::new(JwksValidator::new(keys, rules));
    JwksValidator::refresh_from(&v, file, Duration::from_millis(refresh_ms));
    Ok(OAuthValidator::Jwks(v))
}

/// This broker as a client of listener `listener` of other nodes, with the
/// SASL mechanism of `mechanism_key`.
fn client_side(
    c: &Config,
    listener: &str,
    mechanism_key: &str,
) -> Result<ClientSecurity, SecurityError> {
    let protocol = c
        .kraft
        .protocol_of(listener)
        .unwrap_or(SecurityProtocol::Plaintext);
    let get = |k: &str| {
        c.security
            .get(listener, k)
            .map(|(key, v)| (key, v.to_string()))
    };
    let tls = match protocol {
        SecurityProtocol::Ssl | SecurityProtocol::SaslSsl => Some(tls::client_config(
            &format!("the client of listener {listener}"),
            &get,
        )?),
        _ => None,
    };
    let sasl = match protocol {
        SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => {
            let name = c
                .security
                .broker
                .get(mechanism_key)
                .cloned()
                .unwrap_or_else(|| KAFKA_DEFAULT_MECHANISM.to_string());
            let mechanism = mechanism_named(mechanism_key, &name)?;
            let jaas_key = format!(
                "listener.name.{}.{}.sasl.jaas.config",
                listener.to_ascii_lowercase(),
                name.to_ascii_lowercase()
            );
            let Some((key, line)) = c.security.jaas(listener, &name) else {
                return Err(SecurityError::Missing {
                    key: jaas_key,
                    why: format!(
                        "this broker authenticates to listener {listener} of other nodes with {name}: the line's username and password"
                    ),
                });
            };
            Some(client_sasl(mechanism, &key, line, "the broker's own")?)
        }
        _ => None,
    };
    Ok(ClientSecurity {
        listener: listener.to_string(),
        protocol,
        tls,
        sasl,
    })
}

/// Takes a mechanism, the key holding a JAAS line (named in errors), the
/// line, and whose credentials they are (for the error text); gives the
/// client's SASL settings: the line's `username` and `password`, or for
/// OAUTHBEARER its `unsecuredLoginStringClaim_sub`.
fn client_sasl(
    mechanism: Mechanism,
    key: &str,
    line: &str,
    whose: &str,
) -> Result<ClientSasl, SecurityError> {
    let j = JaasConfig::parse(line).map_err(|source| SecurityError::Jaas {
        key: key.to_string(),
        source,
    })?;
    let (username, password) = match mechanism {
        Mechanism::OAuthBearer => (
            j.options
                .get("unsecuredLoginStringClaim_sub")
                .cloned()
                .unwrap_or_default(),
            String::new(),
        ),
        _ => j
            .client_credentials()
            .ok_or_else(|| SecurityError::Missing {
                key: key.to_string(),
                why: format!("{whose} username=\"…\" password=\"…\" options"),
            })?,
    };
    if username.is_empty() {
        return Err(SecurityError::Missing {
            key: key.to_string(),
            why: format!(
                "{whose} user name (username, or unsecuredLoginStringClaim_sub for OAUTHBEARER)"
            ),
        });
    }
    Ok(ClientSasl {
        mechanism,
        username,
        password,
    })
}

/// The listener this broker connects to on other brokers:
/// `inter.broker.listener.name`; else the listener named after
/// `security.inter.broker.protocol` when set; else the first client
/// listener (what a single-listener broker always used).
fn inter_broker_client(c: &Config, _secret: &[u8]) -> Result<ClientSecurity, SecurityError> {
    let name = if let Some(n) = &c.kraft.inter_broker_listener_name {
        n.clone()
    } else if let Some(p) = c.security.broker.get("security.inter.broker.protocol") {
        let proto =
            SecurityProtocol::from_name(p.trim()).ok_or_else(|| SecurityError::Invalid {
                key: "security.inter.broker.protocol".into(),
                value: p.clone(),
                allowed: "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL".into(),
            })?;
        c.listeners
            .iter()
            .filter(|l| !c.kraft.is_controller_listener(&l.name))
            .find(|l| c.kraft.protocol_of(&l.name) == Some(proto))
            .map(|l| l.name.clone())
            .ok_or_else(|| SecurityError::Invalid {
                key: "security.inter.broker.protocol".into(),
                value: p.clone(),
                allowed: "the protocol of one of the client listeners".into(),
            })?
    } else {
        c.client_listener()
            .map(|l| l.name.clone())
            .unwrap_or_else(|| "PLAINTEXT".to_string())
    };
    client_side(c, &name, "sasl.mechanism.inter.broker.protocol")
}
