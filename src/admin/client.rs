//! A small blocking Kafka protocol client for the operator commands
//! (`fjord groups …`). It speaks to any Kafka-compatible broker: it negotiates
//! versions with ApiVersions, finds group coordinators with FindCoordinator and
//! partition leaders with Metadata, and connects to them as needed. A
//! connection is secured as `--command-config` says
//! (`crate::security::client_props`): TLS with rustls, then SaslHandshake
//! v1 and SaslAuthenticate v2 (PLAIN, SCRAM-SHA-256/512, unsecured
//! OAUTHBEARER), as Kafka's clients do after ApiVersions.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader,
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::security::sasl::SaslClient;
use crate::security::{ClientSasl, ClientSecurity};

/// Errors of the operator client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Could not connect or talk to a broker.
    #[error("{addr}: {source}")]
    Io {
        /// Broker address.
        addr: String,
        /// Cause.
        source: std::io::Error,
    },
    /// A request or response could not be encoded/decoded.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The broker does not support an API this command needs.
    #[error("the broker does not support {0:?}")]
    Unsupported(ApiKey),
    /// The command refuses what it was asked before sending it (a bad
    /// argument, a group that must be inactive first): the reason.
    #[error("{0}")]
    Invalid(String),
    /// The TLS handshake or the SASL authentication failed.
    #[error("{addr}: {reason}")]
    Auth {
        /// Broker address.
        addr: String,
        /// What failed (never a secret).
        reason: String,
    },
    /// The broker answered with a Kafka error code: shown as Kafka's error
    /// name (e.g. TOPIC_ALREADY_EXISTS) and the broker's message, or the
    /// code and whether it is retriable when the broker sent none.
    #[error("{what}: {}: {}", error_name(.error), .message.clone().unwrap_or_else(|| no_message(.error)))]
    Kafka {
        /// What failed.
        what: String,
        /// The Kafka error.
        error: kafka_protocol::ResponseError,
        /// The broker's error message, when it sent one.
        message: Option<String>,
    },
}

/// Takes a Kafka error; gives its name as Kafka spells it
/// (`Errors.TOPIC_ALREADY_EXISTS`, from the table the metrics use,
/// `metrics::errors`), or `UNKNOWN(code)` for a code the table does not
/// know.
pub fn error_name(error: &kafka_protocol::ResponseError) -> String {
    use crate::metrics::errors;
    let code = error.code();
    let slot = errors::slot(code);
    if slot == errors::slot(-1) && code != -1 {
        return format!("UNKNOWN({code})");
    }
    errors::name(slot).to_string()
}

/// Takes a Kafka error the broker sent without a message; gives its code
/// and whether Kafka's protocol calls it retriable.
fn no_message(error: &kafka_protocol::ResponseError) -> String {
    let retriable = if error.is_retriable() {
        ", retriable"
    } else {
        ""
    };
    format!(
        "no message from the broker (error code {}{retriable})",
        error.code()
    )
}

impl ClientError {
    /// Wraps a non-zero Kafka error code.
    pub fn kafka(what: impl Into<String>, code: i16) -> ClientError {
        ClientError::kafka_with(what, code, None)
    }

    /// Wraps a non-zero Kafka error code with the broker's error message
    /// (None or empty: the code is shown).
    pub fn kafka_with(
        what: impl Into<String>,
        code: i16,
        message: Option<&kafka_protocol::protocol::StrBytes>,
    ) -> ClientError {
        ClientError::Kafka {
            what: what.into(),
            error: kafka_protocol::ResponseError::try_from_code(code)
                .unwrap_or(kafka_protocol::ResponseError::Unknown(code)),
            message: message.map(|m| m.to_string()).filter(|m| !m.is_empty()),
        }
    }

    /// Takes a topic Metadata answered UNKNOWN_TOPIC_OR_PARTITION for (a
    /// code Metadata sends without a message); gives the error with the
    /// message kafka-topics.sh prints.
    pub fn unknown_topic(topic: &str) -> ClientError {
        ClientError::Kafka {
            what: format!("topic {topic}"),
            error: kafka_protocol::ResponseError::UnknownTopicOrPartition,
            message: Some(format!("Topic '{topic}' does not exist as expected")),
        }
    }

    /// Gives Ok for code 0, else the error as [`ClientError::kafka_with`].
    pub fn check(
        what: impl Into<String>,
        code: i16,
        message: Option<&kafka_protocol::protocol::StrBytes>,
    ) -> Result<(), ClientError> {
        if code == 0 {
            Ok(())
        } else {
            Err(ClientError::kafka_with(what, code, message))
        }
    }
}

/// The bytes of a connection: plain TCP or TLS over it.
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// One connection to one broker, with the versions it supports.
pub struct Connection {
    addr: String,
    stream: Stream,
    correlation: i32,
    versions: HashMap<i16, (i16, i16)>,
}

impl Connection {
    /// Connects to `addr` (host:port) over PLAINTEXT and negotiates API
    /// versions.
    pub fn connect(addr: &str) -> Result<Connection, ClientError> {
        Connection::connect_with(addr, &ClientSecurity::plaintext(""))
    }

    /// Connects to `addr` (host:port) secured as `security` says (TLS with
    /// the host name of `addr`, then SASL after ApiVersions) and negotiates
    /// API versions. [`ClientError::Auth`] when TLS or SASL fails.
    pub fn connect_with(addr: &str, security: &ClientSecurity) -> Result<Connection, ClientError> {
        let io = |source| ClientError::Io {
            addr: addr.to_string(),
            source,
        };
        let tcp = TcpStream::connect(addr).map_err(io)?;
        tcp.set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(io)?;
        let _ = tcp.set_nodelay(true);
        let stream = match &security.tls {
            None => Stream::Plain(tcp),
            Some(config) => {
                let host = addr
                    .rsplit_once(':')
                    .map_or(addr, |(h, _)| h)
                    .trim_start_matches('[')
                    .trim_end_matches(']');
                let name =
                    rustls_pki_types::ServerName::try_from(host.to_string()).map_err(|e| {
                        ClientError::Auth {
                            addr: addr.to_string(),
                            reason: format!("host name {host:?} for TLS: {e}"),
                        }
                    })?;
                let conn = rustls::ClientConnection::new(config.clone(), name).map_err(|e| {
                    ClientError::Auth {
                        addr: addr.to_string(),
                        reason: format!("TLS: {e}"),
                    }
                })?;
                Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)))
            }
        };
        let mut c = Connection {
            addr: addr.to_string(),
            stream,
            correlation: 0,
            versions: HashMap::new(),
        };
        let mut req = ApiVersionsRequest::default();
        req.client_software_name = StrBytes::from_static_str("fjord-cli");
        req.client_software_version = StrBytes::from_static_str(env!("CARGO_PKG_VERSION"));
        let resp: ApiVersionsResponse = c.send(ApiKey::ApiVersions, 3, &req)?;
        if resp.error_code != 0 {
            return Err(ClientError::kafka("ApiVersions", resp.error_code));
        }
        c.versions = resp
            .api_keys
            .iter()
            .map(|k| (k.api_key, (k.min_version, k.max_version)))
            .collect();
        if let Some(sasl) = &security.sasl {
            c.authenticate(sasl)?;
        }
        Ok(c)
    }

    /// SaslHandshake v1, then SaslAuthenticate (v2 at most) until the
    /// exchange ends; the broker's refusal is [`ClientError::Auth`] with its
    /// message.
    fn authenticate(&mut self, sasl: &ClientSasl) -> Result<(), ClientError> {
        let addr = self.addr.clone();
        let refused = |reason: String| ClientError::Auth {
            addr: addr.clone(),
            reason,
        };
        let mut hs = SaslHandshakeRequest::default();
        hs.mechanism = StrBytes::from_static_str(sasl.mechanism.name());
        let r: SaslHandshakeResponse = self.send(ApiKey::SaslHandshake, 1, &hs)?;
        if r.error_code != 0 {
            let offered: Vec<String> = r.mechanisms.iter().map(|m| m.to_string()).collect();
            return Err(refused(format!(
                "SASL mechanism {} refused ({}); the broker offers {}",
                sasl.mechanism.name(),
                error_name(
                    &kafka_protocol::ResponseError::try_from_code(r.error_code)
                        .unwrap_or(kafka_protocol::ResponseError::Unknown(r.error_code))
                ),
                offered.join(", ")
            )));
        }
        let version = self.version(ApiKey::SaslAuthenticate, 2)?;
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let (mut client, mut token) = SaslClient::start(
            sasl.mechanism,
            &sasl.username,
            &sasl.password,
            now_ms,
            &nonce,
        );
        loop {
            let mut req = SaslAuthenticateRequest::default();
            req.auth_bytes = Bytes::from(token);
            let r: SaslAuthenticateResponse = self.send(ApiKey::SaslAuthenticate, version, &req)?;
            if r.error_code != 0 {
                let name = error_name(
                    &kafka_protocol::ResponseError::try_from_code(r.error_code)
                        .unwrap_or(kafka_protocol::ResponseError::Unknown(r.error_code)),
                );
                let message = r.error_message.map(|m| m.to_string()).unwrap_or_default();
                return Err(refused(format!(
                    "{name}: {message} (user {}, {})",
                    sasl.username,
                    sasl.mechanism.name()
                )));
            }
            match client.step(&r.auth_bytes) {
                Ok(Some(next)) => token = next,
                Ok(None) => return Ok(()),
                Err(e) => {
                    return Err(refused(format!(
                        "the broker's SASL answer does not verify: {e:?}"
                    )))
                }
            }
        }
    }

    /// The address this connection goes to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The highest version of `key` both sides support, up to `ours`.
    pub fn version(&self, key: ApiKey, ours: i16) -> Result<i16, ClientError> {
        let (lo, hi) = self
            .versions
            .get(&(key as i16))
            .copied()
            .ok_or(ClientError::Unsupported(key))?;
        let v = hi.min(ours);
        if v < lo {
            return Err(ClientError::Unsupported(key));
        }
        Ok(v)
    }

    /// Sends one request at `version` and decodes its response.
    pub fn send<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        req: &Req,
    ) -> Result<Resp, ClientError> {
        let proto =
            |e: &dyn std::fmt::Display| ClientError::Protocol(format!("{key:?} v{version}: {e}"));
        self.correlation += 1;
        let mut header = RequestHeader::default();
        header.request_api_key = key as i16;
        header.request_api_version = version;
        header.correlation_id = self.correlation;
        header.client_id = Some(StrBytes::from_static_str("fjord-cli"));
        let mut body = BytesMut::new();
        body.put_i32(0);
        header
            .encode(&mut body, key.request_header_version(version))
            .map_err(|e| proto(&e))?;
        req.encode(&mut body, version).map_err(|e| proto(&e))?;
        let len = (body.len() - 4) as i32;
        body[0..4].copy_from_slice(&len.to_be_bytes());
        let io = |source| ClientError::Io {
            addr: self.addr.clone(),
            source,
        };
        self.stream.write_all(&body).map_err(io)?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).map_err(|source| {
            if source.kind() == std::io::ErrorKind::UnexpectedEof {
                ClientError::Protocol(format!(
                    "{}: the connection closed before the answer to {key:?} (is it a Kafka \
                     listener? a TLS or SASL listener needs --command-config)",
                    self.addr
                ))
            } else {
                ClientError::Io {
                    addr: self.addr.clone(),
                    source,
                }
            }
        })?;
        let size = i32::from_be_bytes(size);
        if !(4..=(256 << 20)).contains(&size) {
            return Err(ClientError::Protocol(format!(
                "{}: {key:?}: an answer of {size} bytes is not a Kafka response (is it a \
                 Kafka listener? a TLS listener needs --command-config)",
                self.addr
            )));
        }
        let mut buf = vec![0u8; size as usize];
        self.stream
            .read_exact(&mut buf)
            .map_err(|source| ClientError::Io {
                addr: self.addr.clone(),
                source,
            })?;
        let mut buf = Bytes::from(buf);
        let hv = if key == ApiKey::ApiVersions {
            0
        } else {
            key.response_header_version(version)
        };
        let h = ResponseHeader::decode(&mut buf, hv).map_err(|e| proto(&e))?;
        if h.correlation_id != self.correlation {
            return Err(ClientError::Protocol(format!(
                "{key:?}: correlation id {} != {}",
                h.correlation_id, self.correlation
            )));
        }
        let resp = Resp::decode(&mut buf, version).map_err(|e| proto(&e))?;
        let _ = buf.remaining();
        Ok(resp)
    }
}
