//! One Kafka protocol connection from this broker to another one's
//! inter-broker listener, for broker-to-broker requests (the replica
//! fetcher's Fetch, coordinator calls): requests framed and encoded with
//! the `kafka-protocol` crate, one at a time, each answered before the next
//! (the correlation id is checked). The connection uses the inter-broker
//! listener's protocol (`security.inter.broker.protocol` /
//! `inter.broker.listener.name`): TLS with the truststore (and the
//! keystore as client certificate), then SASL with
//! `sasl.mechanism.inter.broker.protocol` and the JAAS line's `username`
//! and `password`. A session the other broker expires (KIP-368) ends in a
//! closed connection, which the caller reconnects.

use std::io;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};

use crate::security::sasl::SaslClient;
use crate::security::{ClientSasl, ClientSecurity};
use crate::transport::Transport;

/// The largest response accepted (bytes): a follower fetch is bounded by
/// `replica.fetch.response.max.bytes` plus the first batch of each
/// partition, far below this.
const MAX_RESPONSE: usize = 256 * 1024 * 1024;

/// The client id this broker's requests carry.
const CLIENT_ID: &str = "fjord-replica-fetcher";

/// A connection to another broker.
pub struct BrokerConnection {
    stream: Transport,
    addr: String,
    next_correlation_id: i32,
}

impl BrokerConnection {
    /// Connects to `addr` (`host:port`) within `timeout`, secured as
    /// `security` says (see `Transport::connect`).
    pub async fn connect(
        addr: &str,
        timeout: Duration,
        security: &ClientSecurity,
    ) -> io::Result<BrokerConnection> {
        let stream = Transport::connect(addr, timeout, security).await?;
        let mut c = BrokerConnection {
            stream,
            addr: addr.to_string(),
            next_correlation_id: 1,
        };
        if let Some(sasl) = &security.sasl {
            c.authenticate(sasl, timeout).await?;
        }
        Ok(c)
    }

    /// SaslHandshake v1 and SaslAuthenticate v2 until the exchange ends.
    async fn authenticate(&mut self, sasl: &ClientSasl, timeout: Duration) -> io::Result<()> {
        let denied = |what: String| io::Error::new(io::ErrorKind::PermissionDenied, what);
        let hs = SaslHandshakeRequest::default()
            .with_mechanism(StrBytes::from_static_str(sasl.mechanism.name()));
        let r = self.call(&hs, 1, timeout).await?;
        if r.error_code != 0 {
            return Err(denied(format!(
                "{} refused SASL mechanism {} (error {}; it offers {:?})",
                self.addr,
                sasl.mechanism.name(),
                r.error_code,
                r.mechanisms
            )));
        }
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let (mut client, mut token) = SaslClient::start(
            sasl.mechanism,
            &sasl.username,
            &sasl.password,
            crate::shard::now_ms(),
            &nonce,
        );
        loop {
            let req = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
            let r = self.call(&req, 2, timeout).await?;
            if r.error_code != 0 {
                return Err(denied(format!(
                    "{} refused the credentials of {} ({}): {}",
                    self.addr,
                    sasl.username,
                    sasl.mechanism.name(),
                    r.error_message.map(|m| m.to_string()).unwrap_or_default()
                )));
            }
            let (next_client, next) =
                crate::transport::sasl_step(client, r.auth_bytes.to_vec()).await?;
            client = next_client;
            match next {
                Some(t) => token = t,
                None => return Ok(()),
            }
        }
    }

    /// Sets the connection's SO_RCVBUF to `bytes` (Linux doubles it)
    /// for `key` (`replica.socket.receive.buffer.bytes`); 0 or -1 leaves
    /// the kernel's autotuning. Called once the TCP, TLS and SASL
    /// handshakes are done (glommio makes the connection itself), so the
    /// handshakes and the window scale are the kernel's; from here on the
    /// window is no larger than the buffer. The kernel caps the size at
    /// net.core.rmem_max: the first capped connection of the process is
    /// logged at warn, the others at debug. A failure is logged at warn and
    /// the connection kept as it is.
    pub fn set_receive_buffer(&self, key: &str, bytes: i32) {
        static CAP_WARNED: std::sync::atomic::AtomicBool =
            std::sync::atomic::AtomicBool::new(false);
        let Some(n) = crate::transport::buffer_size(bytes) else {
            return;
        };
        let socket = socket2::SockRef::from(self.stream.stream());
        if let Err(e) = socket.set_recv_buffer_size(n) {
            log::warn!(
                "{key}={n}: cannot set the receive buffer of the connection to {}: {e}",
                self.addr
            );
            return;
        }
        if let Some(got) = crate::transport::capped(n, socket.recv_buffer_size()) {
            let first = !CAP_WARNED.swap(true, std::sync::atomic::Ordering::Relaxed);
            let level = if first {
                log::Level::Warn
            } else {
                log::Level::Debug
            };
            log::log!(
                level,
                "{key}={n} is above the kernel's limit (net.core.rmem_max): the connection to {} gets {got} bytes",
                self.addr
            );
        }
    }

    /// Where this connection goes.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Sends `req` at `version` and gives its decoded response, within
    /// `timeout`. Errors: the write or read failed, the response is larger
    /// than 256 MiB, its correlation id is not the request's, or it does not
    /// decode (`InvalidData`); the connection must then be dropped.
    pub async fn call<R: Request>(
        &mut self,
        req: &R,
        version: i16,
        timeout: Duration,
    ) -> io::Result<R::Response> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str(CLIENT_ID)));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, R::header_version(version))
            .and_then(|()| req.encode(&mut body, version))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let len = u32::try_from(body.len()).map_err(io::Error::other)?;
        let exchange = async {
            let mut frame = Vec::with_capacity(4 + body.len());
            frame.extend_from_slice(&len.to_be_bytes());
            frame.extend_from_slice(&body);
            self.stream.write_all(&frame).await?;
            let mut size = [0u8; 4];
            self.stream.read_exact(&mut size).await?;
            let size = u32::from_be_bytes(size) as usize;
            if size > MAX_RESPONSE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("response of {size} bytes"),
                ));
            }
            let mut buf = vec![0u8; size];
            self.stream.read_exact(&mut buf).await?;
            Ok(Bytes::from(buf))
        };
        let timer = async {
            glommio::timer::sleep(timeout).await;
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no answer from {} within {timeout:?}", self.addr),
            ))
        };
        let mut buf = futures_lite::future::or(exchange, timer).await?;
        let response_header_version = <R::Response as HeaderVersion>::header_version(version);
        let got =
            kafka_protocol::messages::ResponseHeader::decode(&mut buf, response_header_version)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?
                .correlation_id;
        if got != correlation_id {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("correlation id {got}, expected {correlation_id}"),
            ));
        }
        <R::Response as Decodable>::decode(&mut buf, version)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
    }
}
