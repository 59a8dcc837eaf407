//! One Kafka protocol connection from this broker to another one's client
//! listener, for broker-to-broker requests (the replica fetcher's Fetch):
//! requests framed and encoded with the `kafka-protocol` crate, one at a
//! time, each answered before the next (the correlation id is checked).

use std::io;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use kafka_protocol::messages::RequestHeader;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};

/// The largest response accepted (bytes): a follower fetch is bounded by
/// `replica.fetch.response.max.bytes` plus the first batch of each
/// partition, far below this.
const MAX_RESPONSE: usize = 256 * 1024 * 1024;

/// The client id this broker's requests carry.
const CLIENT_ID: &str = "fjord-replica-fetcher";

/// A connection to another broker.
pub struct BrokerConnection {
    stream: TcpStream,
    addr: String,
    next_correlation_id: i32,
}

impl BrokerConnection {
    /// Connects to `addr` (`host:port`) within `timeout`. Errors with the
    /// connect failure.
    pub async fn connect(addr: &str, timeout: Duration) -> io::Result<BrokerConnection> {
        let stream = TcpStream::connect_timeout(addr, timeout)
            .await
            .map_err(|e| io::Error::new(io::ErrorKind::ConnectionRefused, e.to_string()))?;
        let _ = stream.set_nodelay(true);
        Ok(BrokerConnection {
            stream,
            addr: addr.to_string(),
            next_correlation_id: 1,
        })
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
            self.stream.flush().await?;
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
