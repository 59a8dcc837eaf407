//! The KRaft keys of a Kafka node's `server.properties`: `process.roles`,
//! `controller.quorum.voters`, `controller.quorum.bootstrap.servers`,
//! `controller.listener.names`, `listener.security.protocol.map` and
//! `inter.broker.listener.name`, with Kafka's syntax and checks.
//!
//! Fjord runs one combined (broker and controller) node: a file written for
//! a combined-mode Kafka node is accepted unchanged; the quorum settings are
//! parsed into typed values and kept for the metadata quorum, which does not
//! exist yet (see docs/decisions/kraft-properties-accepted.md).

use std::collections::BTreeMap;

use super::{invalid, Config, ConfigError, Listener};

/// `process.roles`: the roles of this node (Kafka's `broker`, `controller`
/// or both, comma-separated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessRoles {
    /// The node serves clients (the `broker` role).
    pub broker: bool,
    /// The node is a metadata quorum voter (the `controller` role).
    pub controller: bool,
}

/// One entry of `controller.quorum.voters`: `id@host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumVoter {
    /// The voter's `node.id`.
    pub id: i32,
    /// Host of its controller listener, as written (not resolved).
    pub host: String,
    /// Port of its controller listener.
    pub port: u16,
}

/// One `host:port` of `controller.quorum.bootstrap.servers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    /// Host, as written (not resolved).
    pub host: String,
    /// Port.
    pub port: u16,
}

/// A security protocol of `listener.security.protocol.map` (Kafka's
/// `SecurityProtocol`). Only [`SecurityProtocol::Plaintext`] is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecurityProtocol {
    /// `PLAINTEXT`.
    Plaintext,
    /// `SSL`.
    Ssl,
    /// `SASL_PLAINTEXT`.
    SaslPlaintext,
    /// `SASL_SSL`.
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name of the protocol.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// The protocol named `name` (any case), as Kafka's
    /// `SecurityProtocol.forName`.
    pub fn from_name(name: &str) -> Option<SecurityProtocol> {
        [
            SecurityProtocol::Plaintext,
            SecurityProtocol::Ssl,
            SecurityProtocol::SaslPlaintext,
            SecurityProtocol::SaslSsl,
        ]
        .into_iter()
        .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

/// The KRaft settings of a node as given; the defaults are Kafka's (empty,
/// unset). Only [`Config::validate`] relates them to each other.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KraftConfig {
    /// `process.roles`; None when not given (Fjord then runs its combined
    /// node, as always).
    pub process_roles: Option<ProcessRoles>,
    /// `controller.quorum.voters`, in the order given.
    pub voters: Vec<QuorumVoter>,
    /// `controller.quorum.bootstrap.servers`, in the order given.
    pub bootstrap_servers: Vec<HostPort>,
    /// `controller.listener.names`, upper-cased, in the order given.
    pub controller_listener_names: Vec<String>,
    /// `listener.security.protocol.map`, listener name (upper-cased) →
    /// protocol; None when not given (Kafka's default map applies).
    pub protocol_map: Option<BTreeMap<String, SecurityProtocol>>,
    /// `inter.broker.listener.name`, upper-cased; None when not given.
    pub inter_broker_listener_name: Option<String>,
}

fn items(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// Whether `name` is a valid listener name (letters, digits, `_`, `-`).
pub(crate) fn valid_listener_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn host_port(item: &str) -> Option<(String, u16)> {
    let (h, p) = item.rsplit_once(':')?;
    let h = h.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = p.parse().ok()?;
    (!h.is_empty() && port > 0).then(|| (h.to_string(), port))
}

/// Parses `process.roles`: `broker`, `controller` or both, comma-separated
/// (any order, each once), as Kafka.
pub fn parse_process_roles(key: &str, value: &str) -> Result<ProcessRoles, ConfigError> {
    let allowed = "broker, controller, or broker,controller";
    let mut roles = ProcessRoles {
        broker: false,
        controller: false,
    };
    for r in items(value) {
        let slot = match r {
            "broker" => &mut roles.broker,
            "controller" => &mut roles.controller,
            _ => return Err(invalid(key, value, allowed)),
        };
        if *slot {
            return Err(invalid(key, value, "each role once: broker, controller"));
        }
        *slot = true;
    }
    if !roles.broker && !roles.controller {
        return Err(invalid(key, value, allowed));
    }
    Ok(roles)
}

/// Parses `controller.quorum.voters`: `id@host:port,…` (Kafka's syntax; an
/// empty value is the empty list). Ids are non-negative and distinct.
pub fn parse_voters(key: &str, value: &str) -> Result<Vec<QuorumVoter>, ConfigError> {
    let allowed = "a comma-separated list of id@host:port (id >= 0, port in [1, 65535])";
    let mut out: Vec<QuorumVoter> = Vec::new();
    for item in items(value) {
        let (id, hp) = item
            .split_once('@')
            .ok_or_else(|| invalid(key, value, allowed))?;
        let id: i32 = id
            .trim()
            .parse()
            .ok()
            .filter(|i| *i >= 0)
            .ok_or_else(|| invalid(key, value, allowed))?;
        let (host, port) = host_port(hp.trim()).ok_or_else(|| invalid(key, value, allowed))?;
        if out.iter().any(|v| v.id == id) {
            return Err(invalid(key, value, "each voter id once"));
        }
        out.push(QuorumVoter { id, host, port });
    }
    Ok(out)
}

/// Parses `controller.quorum.bootstrap.servers`: `host:port,…` (an empty
/// value is the empty list).
pub fn parse_host_ports(key: &str, value: &str) -> Result<Vec<HostPort>, ConfigError> {
    items(value)
        .map(|item| {
            host_port(item)
                .map(|(host, port)| HostPort { host, port })
                .ok_or_else(|| {
                    invalid(
                        key,
                        value,
                        "a comma-separated list of host:port (port in [1, 65535])",
                    )
                })
        })
        .collect()
}

/// Parses a comma-separated list of listener names (upper-cased), each
/// once.
pub fn parse_listener_names(key: &str, value: &str) -> Result<Vec<String>, ConfigError> {
    let mut out: Vec<String> = Vec::new();
    for n in items(value) {
        if !valid_listener_name(n) {
            return Err(invalid(
                key,
                value,
                "a comma-separated list of listener names (letters, digits, _ and -)",
            ));
        }
        let n = n.to_ascii_uppercase();
        if out.contains(&n) {
            return Err(invalid(key, value, "each listener name once"));
        }
        out.push(n);
    }
    Ok(out)
}

/// Parses `listener.security.protocol.map`: `NAME:PROTOCOL,…` with Kafka's
/// protocols (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), each name once.
/// Protocols other than PLAINTEXT are accepted here and refused by
/// [`Config::validate`] only for a listener that uses them.
pub fn parse_protocol_map(
    key: &str,
    value: &str,
) -> Result<BTreeMap<String, SecurityProtocol>, ConfigError> {
    let allowed =
        "a comma-separated list of NAME:PROTOCOL (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)";
    let mut out = BTreeMap::new();
    for item in items(value) {
        let (name, proto) = item
            .split_once(':')
            .ok_or_else(|| invalid(key, value, allowed))?;
        let name = name.trim();
        let proto = SecurityProtocol::from_name(proto.trim())
            .ok_or_else(|| invalid(key, value, allowed))?;
        if !valid_listener_name(name) {
            return Err(invalid(key, value, allowed));
        }
        if out.insert(name.to_ascii_uppercase(), proto).is_some() {
            return Err(invalid(key, value, "each listener name once"));
        }
    }
    Ok(out)
}

/// Parses `inter.broker.listener.name`: one listener name (upper-cased);
/// empty is unset.
pub fn parse_inter_broker_name(key: &str, value: &str) -> Result<Option<String>, ConfigError> {
    let v = value.trim();
    if v.is_empty() {
        return Ok(None);
    }
    if !valid_listener_name(v) {
        return Err(invalid(
            key,
            value,
            "a listener name (letters, digits, _ and -)",
        ));
    }
    Ok(Some(v.to_ascii_uppercase()))
}

impl KraftConfig {
    /// The security protocol of listener `name`: the map's entry when the
    /// map is given; otherwise Kafka's default map (each protocol's own
    /// name) with the controller listeners as PLAINTEXT. None: no protocol
    /// for that name (Kafka refuses to start).
    pub fn protocol_of(&self, name: &str) -> Option<SecurityProtocol> {
        match &self.protocol_map {
            Some(m) => m.get(name).copied(),
            None if self.controller_listener_names.iter().any(|n| n == name) => {
                SecurityProtocol::from_name(name).or(Some(SecurityProtocol::Plaintext))
            }
            None => SecurityProtocol::from_name(name),
        }
    }

    /// Whether `name` is one of `controller.listener.names`.
    pub fn is_controller_listener(&self, name: &str) -> bool {
        self.controller_listener_names.iter().any(|n| n == name)
    }
}

/// The checks of Kafka's `KafkaConfig` on the KRaft settings and
/// listeners, once every key is applied; errors name the key, the value
/// and the rule. Used by [`Config::validate`].
pub(super) fn validate(c: &Config) -> Result<(), ConfigError> {
    let k = &c.kraft;
    if let Some(roles) = k.process_roles {
        if !roles.broker {
            return Err(invalid(
                "process.roles",
                "controller",
                "broker,controller or broker: every controller node is also a broker here (controller-only nodes are not supported yet)",
            ));
        }
        if c.ids_given == (None, None) {
            return Err(invalid(
                "node.id",
                "",
                "an id (an integer in [0, 2147483647]): required when process.roles is set",
            ));
        }
        if k.voters.is_empty() && k.bootstrap_servers.is_empty() {
            return Err(invalid(
                "controller.quorum.voters",
                "",
                "the quorum's voters as id@host:port,… (or controller.quorum.bootstrap.servers) when process.roles is set",
            ));
        }
        if roles.controller {
            if !k.voters.is_empty() && !k.voters.iter().any(|v| v.id == c.node_id) {
                return Err(invalid(
                    "controller.quorum.voters",
                    &voters_text(&k.voters),
                    &format!(
                        "a list that includes this node (node.id={}) when process.roles contains controller",
                        c.node_id
                    ),
                ));
            }
            if !k
                .controller_listener_names
                .iter()
                .any(|n| c.listeners.iter().any(|l| &l.name == n))
            {
                return Err(invalid(
                    "controller.listener.names",
                    &k.controller_listener_names.join(","),
                    "at least one name of a listener in listeners when process.roles contains controller",
                ));
            }
        } else {
            // A broker-only node observes the quorum through its voters.
            if k.voters.is_empty() {
                return Err(invalid(
                    "controller.quorum.voters",
                    "",
                    "the quorum's voters as id@host:port,… for a broker-only node (process.roles=broker): it fetches the metadata from them",
                ));
            }
            if k.voters.iter().any(|v| v.id == c.node_id) {
                return Err(invalid(
                    "controller.quorum.voters",
                    &voters_text(&k.voters),
                    &format!(
                        "a list without this node (node.id={}): a broker-only node (process.roles=broker) is not a voter",
                        c.node_id
                    ),
                ));
            }
            if k.controller_listener_names.is_empty() {
                return Err(invalid(
                    "controller.listener.names",
                    "",
                    "the controllers' listener name (as Kafka requires on a broker-only node)",
                ));
            }
            if let Some(l) = c
                .listeners
                .iter()
                .find(|l| k.is_controller_listener(&l.name))
            {
                return Err(invalid(
                    "controller.listener.names",
                    &k.controller_listener_names.join(","),
                    &format!(
                        "names that are not in listeners when process.roles=broker (listener {} is named; a broker-only node serves no controller listener)",
                        l.name
                    ),
                ));
            }
        }
    }
    // Every listener needs a protocol (its files and mechanisms are checked
    // when the broker starts: `security::Security::from_config`).
    for l in &c.listeners {
        if k.protocol_of(&l.name).is_none() {
            return Err(invalid(
                "listener.security.protocol.map",
                &protocol_map_text(k),
                &format!("a security protocol for listener {}", l.name),
            ));
        }
    }
    // Each listener its own port (port 0 picks a free one for each).
    for (i, l) in c.listeners.iter().enumerate() {
        let port = l.addr.port();
        if port != 0 && c.listeners[..i].iter().any(|o| o.addr.port() == port) {
            return Err(invalid(
                "listeners",
                &listeners_text(&c.listeners),
                "each listener on a different port",
            ));
        }
    }
    let client: Vec<&Listener> = c
        .listeners
        .iter()
        .filter(|l| !k.is_controller_listener(&l.name))
        .collect();
    if client.is_empty() {
        return Err(invalid(
            "listeners",
            &listeners_text(&c.listeners),
            "at least one listener not named in controller.listener.names (the one clients use)",
        ));
    }
    if let Some(ib) = &k.inter_broker_listener_name {
        if !client.iter().any(|l| &l.name == ib) {
            return Err(invalid(
                "inter.broker.listener.name",
                ib,
                "the name of a listener in listeners that is not a controller listener",
            ));
        }
    }
    for a in &c.advertised_listeners {
        if !c.listeners.iter().any(|l| l.name == a.name) {
            return Err(invalid(
                "advertised.listeners",
                &format!("{}://{}:{}", a.name, a.host, a.port),
                "listener names that are in listeners",
            ));
        }
    }
    Ok(())
}

fn voters_text(v: &[QuorumVoter]) -> String {
    v.iter()
        .map(|v| format!("{}@{}:{}", v.id, v.host, v.port))
        .collect::<Vec<_>>()
        .join(",")
}

fn protocol_map_text(k: &KraftConfig) -> String {
    k.protocol_map
        .iter()
        .flatten()
        .map(|(n, p)| format!("{n}:{}", p.name()))
        .collect::<Vec<_>>()
        .join(",")
}

fn listeners_text(l: &[Listener]) -> String {
    l.iter()
        .map(|l| format!("{}://{}", l.name, l.addr))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::super::parse_listeners;
    use super::*;

    /// A combined-mode node's server.properties, as Kafka's quickstart
    /// writes it.
    const COMBINED: &[(&str, &str)] = &[
        ("process.roles", "broker,controller"),
        ("node.id", "1"),
        ("controller.quorum.voters", "1@127.0.0.1:9093"),
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
        ),
        ("advertised.listeners", "PLAINTEXT://127.0.0.1:9092"),
        ("controller.listener.names", "CONTROLLER"),
        ("inter.broker.listener.name", "PLAINTEXT"),
        (
            "listener.security.protocol.map",
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        ),
        ("log.dirs", "/tmp/kraft-combined-logs"),
        ("num.partitions", "1"),
    ];

    fn combined(extra: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        c.apply(COMBINED.iter().chain(extra).copied())?;
        c.validate()?;
        Ok(c)
    }

    fn err(extra: &[(&str, &str)]) -> String {
        combined(extra)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn combined_mode_file_is_accepted() {
        let c = combined(&[]).unwrap();
        assert!(c.unknown_keys.is_empty(), "{:?}", c.unknown_keys);
        let k = &c.kraft;
        assert_eq!(
            k.process_roles,
            Some(ProcessRoles {
                broker: true,
                controller: true
            })
        );
        assert_eq!(
            k.voters,
            [QuorumVoter {
                id: 1,
                host: "127.0.0.1".into(),
                port: 9093
            }]
        );
        assert_eq!(k.controller_listener_names, ["CONTROLLER"]);
        assert_eq!(k.inter_broker_listener_name.as_deref(), Some("PLAINTEXT"));
        assert_eq!(k.protocol_of("SSL"), Some(SecurityProtocol::Ssl));
        let client = c.client_listener().unwrap();
        assert_eq!(
            (client.name.as_str(), client.addr.port()),
            ("PLAINTEXT", 9092)
        );
        let ctrl = c.controller_listener().unwrap();
        assert_eq!((ctrl.name.as_str(), ctrl.addr.port()), ("CONTROLLER", 9093));
        assert_eq!(c.client_advertised(), Some(("127.0.0.1".into(), 9092)));
        // The controller listener may come first: the client one is the
        // listener not named in controller.listener.names.
        let c = combined(&[(
            "listeners",
            "CONTROLLER://127.0.0.1:9093,PLAINTEXT://127.0.0.1:0",
        )])
        .unwrap();
        assert_eq!(c.client_listener().map(|l| l.addr.port()), Some(0));
        // The newer controller.quorum.bootstrap.servers instead of voters.
        let c = combined(&[
            ("controller.quorum.voters", ""),
            ("controller.quorum.bootstrap.servers", "127.0.0.1:9093"),
        ])
        .unwrap();
        assert_eq!(
            c.kraft.bootstrap_servers,
            [HostPort {
                host: "127.0.0.1".into(),
                port: 9093
            }]
        );
    }

    /// The shape of the config/server.properties shipped with Kafka 4.x:
    /// `controller.quorum.bootstrap.servers`, listeners without a host, the
    /// controller listener advertised too.
    #[test]
    fn kafka_4_shipped_file_is_accepted() {
        let text = "\
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.properties");
        std::fs::write(&path, text).unwrap();
        let pairs = super::super::read_properties(&path).unwrap();
        let mut c = Config::default();
        c.apply(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .unwrap();
        c.validate().unwrap();
        let client = c.client_listener().unwrap();
        assert_eq!(
            (client.name.as_str(), client.addr.to_string()),
            ("PLAINTEXT", "0.0.0.0:9092".to_string())
        );
        assert_eq!(c.client_advertised(), Some(("localhost".into(), 9092)));
        assert_eq!(c.kraft.bootstrap_servers.len(), 1);
        assert!(c.kraft.voters.is_empty());
        assert!(
            c.unknown_keys
                .iter()
                .all(|k| k.contains("replication.factor")
                    || k.contains("min.isr")
                    || k.starts_with("num.")
                    || k.starts_with("socket.")),
            "{:?}",
            c.unknown_keys
        );
    }

    #[test]
    fn plain_files_keep_working() {
        let mut c = Config::default();
        c.set("listeners", "PLAINTEXT://127.0.0.1:0").unwrap();
        assert!(c.validate().is_ok());
        assert_eq!(c.client_listener().map(|l| l.addr.port()), Some(0));
        assert!(c.controller_listener().is_none());
        assert_eq!(c.client_advertised(), None);
        c.set("advertised.listeners", "example:9000").unwrap();
        assert!(c.validate().is_ok());
        assert_eq!(c.client_advertised(), Some(("example".into(), 9000)));
        c.set("listeners", "127.0.0.1:0").unwrap();
        assert_eq!(c.listeners[0].name, "PLAINTEXT");
        assert!(Config::default().validate().is_ok());
    }

    #[test]
    fn process_roles() {
        let p = |v| parse_process_roles("process.roles", v);
        assert_eq!(
            p("controller, broker").ok(),
            Some(ProcessRoles {
                broker: true,
                controller: true
            })
        );
        assert!(p("broker,broker").is_err());
        assert!(p("").is_err());
        assert!(p("zookeeper").is_err());
        assert!(p("Broker").is_err());
        assert_eq!(
            err(&[("process.roles", "controller")]),
            "invalid value \"controller\" for process.roles: broker,controller or broker: every controller node is also a broker here (controller-only nodes are not supported yet)"
        );
        // A broker-only node: not a voter, no controller listener of its own.
        assert!(
            err(&[("process.roles", "broker")]).contains("a list without this node (node.id=1)")
        );
        let broker_only: &[(&str, &str)] = &[
            ("process.roles", "broker"),
            ("node.id", "4"),
            ("listeners", "PLAINTEXT://127.0.0.1:9092"),
        ];
        assert_eq!(err(broker_only), "");
        let mut with_ctrl = broker_only.to_vec();
        with_ctrl[2] = (
            "listeners",
            "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
        );
        assert!(
            err(&with_ctrl).contains("names that are not in listeners when process.roles=broker")
        );
    }

    #[test]
    fn voters() {
        let p = |v| parse_voters("controller.quorum.voters", v);
        let v = p("1@a:9093, 2@[::1]:9094,3@c.example:1").unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!((v[1].id, v[1].host.as_str(), v[1].port), (2, "::1", 9094));
        assert_eq!(p("").unwrap(), []);
        for bad in [
            "1@a",
            "a:9093",
            "x@a:9093",
            "-1@a:9093",
            "1@a:0",
            "1@a:70000",
            "1@:9093",
            "1@a:1,1@b:2",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
        assert_eq!(
            err(&[("controller.quorum.voters", "2@127.0.0.1:9093")]),
            "invalid value \"2@127.0.0.1:9093\" for controller.quorum.voters: a list that includes this node (node.id=1) when process.roles contains controller"
        );
        assert!(err(&[("controller.quorum.voters", "")]).contains("when process.roles is set"));
        let c = combined(&[
            ("node.id", "2"),
            ("controller.quorum.voters", "1@h1:9093,2@h2:9093,3@h3:9093"),
        ])
        .unwrap();
        assert_eq!(c.kraft.voters.len(), 3);
    }

    #[test]
    fn bootstrap_servers_and_names() {
        let p = |v| parse_host_ports("controller.quorum.bootstrap.servers", v);
        assert_eq!(p("a:1,b:2").unwrap().len(), 2);
        assert!(p("a").is_err());
        assert!(p("a:0").is_err());
        let n = |v| parse_listener_names("controller.listener.names", v);
        assert_eq!(n("controller, Other").unwrap(), ["CONTROLLER", "OTHER"]);
        assert!(n("A,a").is_err());
        assert!(n("a b").is_err());
        let ib = |v| parse_inter_broker_name("inter.broker.listener.name", v);
        assert_eq!(ib(" plaintext ").unwrap().as_deref(), Some("PLAINTEXT"));
        assert_eq!(ib("").unwrap(), None);
        assert!(ib("a:b").is_err());
    }

    #[test]
    fn protocol_map() {
        let p = |v| parse_protocol_map("listener.security.protocol.map", v);
        let m = p("internal:plaintext, EXTERNAL:SASL_SSL").unwrap();
        assert_eq!(m["INTERNAL"], SecurityProtocol::Plaintext);
        assert_eq!(m["EXTERNAL"], SecurityProtocol::SaslSsl);
        assert!(p("A:TLS").is_err());
        assert!(p("A").is_err());
        assert!(p("A:SSL,a:SSL").is_err());
        // Kafka's default map: a controller listener is PLAINTEXT.
        let c = combined(&[("listener.security.protocol.map", "")]);
        assert!(c.is_ok(), "{c:?}");
        let mut k = KraftConfig::default();
        assert_eq!(k.protocol_of("CONTROLLER"), None);
        k.controller_listener_names = vec!["CONTROLLER".into()];
        assert_eq!(
            k.protocol_of("CONTROLLER"),
            Some(SecurityProtocol::Plaintext)
        );
        assert_eq!(k.protocol_of("SSL"), Some(SecurityProtocol::Ssl));
    }

    #[test]
    fn listener_rules() {
        // Any protocol of the map is accepted here (its files and
        // mechanisms are checked at start, `security::Security`).
        assert!(combined(&[(
            "listener.security.protocol.map",
            "CONTROLLER:SSL,PLAINTEXT:PLAINTEXT"
        )])
        .is_ok());
        // A listener name the map does not know.
        assert!(
            err(&[("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT")])
                .contains("a security protocol for listener CONTROLLER")
        );
        // A name that is not a protocol needs the map.
        let mut c = Config::default();
        c.set("listeners", "CLIENT://127.0.0.1:0").unwrap();
        assert!(c.validate().is_err());
        c.set("listener.security.protocol.map", "CLIENT:PLAINTEXT")
            .unwrap();
        assert!(c.validate().is_ok());
        // Listener names: each once, valid characters.
        assert!(parse_listeners("listeners", "A://127.0.0.1:1,a://127.0.0.1:2").is_err());
        assert!(parse_listeners("listeners", "A B://127.0.0.1:1").is_err());
        assert!(parse_listeners("listeners", "SASL_SSL://127.0.0.1:1").is_ok());
        // Only controller listeners: no listener for clients.
        assert!(err(&[("listeners", "CONTROLLER://127.0.0.1:9093")])
            .contains("at least one listener not named in controller.listener.names"));
        // The controller listener must be among the listeners.
        assert!(err(&[("listeners", "PLAINTEXT://127.0.0.1:9092")])
            .contains("for controller.listener.names"));
        // inter.broker.listener.name names a client listener.
        assert!(err(&[("inter.broker.listener.name", "CONTROLLER")])
            .contains("for inter.broker.listener.name"));
        assert!(err(&[("inter.broker.listener.name", "OTHER")])
            .contains("for inter.broker.listener.name"));
        // Each listener its own port; port 0 may repeat.
        assert!(err(&[(
            "listeners",
            "PLAINTEXT://127.0.0.1:9093,CONTROLLER://127.0.0.1:9093"
        )])
        .contains("each listener on a different port"));
        assert!(combined(&[(
            "listeners",
            "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0"
        )])
        .is_ok());
        // node.id is required with process.roles, as in Kafka.
        let mut c = Config::default();
        c.apply(COMBINED.iter().filter(|(k, _)| *k != "node.id").copied())
            .unwrap();
        assert!(c
            .validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
            .contains("required when process.roles is set"));
        // advertised.listeners by name.
        assert!(err(&[("advertised.listeners", "OTHER://h:1")])
            .contains("listener names that are in listeners"));
        let c = combined(&[(
            "advertised.listeners",
            "CONTROLLER://c:9093,PLAINTEXT://example:9000",
        )])
        .unwrap();
        assert_eq!(c.client_advertised(), Some(("example".into(), 9000)));
        assert!(combined(&[("advertised.listeners", "PLAINTEXT://a:1,PLAINTEXT://b:2")]).is_err());
    }

    #[test]
    fn described_as_given() {
        let c = combined(&[]).unwrap();
        let get = |k: &str| super::super::broker_def(k).and_then(|d| (d.get)(&c));
        assert_eq!(get("process.roles").as_deref(), Some("broker,controller"));
        assert_eq!(
            get("controller.quorum.voters").as_deref(),
            Some("1@127.0.0.1:9093")
        );
        assert_eq!(
            get("controller.listener.names").as_deref(),
            Some("CONTROLLER")
        );
        assert_eq!(
            get("listener.security.protocol.map").as_deref(),
            Some("CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL")
        );
        assert_eq!(
            get("inter.broker.listener.name").as_deref(),
            Some("PLAINTEXT")
        );
    }
}
