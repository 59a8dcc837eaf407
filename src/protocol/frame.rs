//! Request framing and response encoding (no I/O here).
//!
//! A request frame is `size: i32` followed by `size` bytes: the request header
//! (`api_key i16, api_version i16, correlation_id i32, client_id nullable
//! string`, plus tagged fields from header v2) and the body. The response is
//! `size: i32`, the response header (`correlation_id`, plus tagged fields from
//! header v1) and the body. The response header version comes from the API key
//! and version; ApiVersions always answers with header v0 (KIP-511).

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::ProtocolError;
use crate::storage::FileRegion;

/// The fixed part of a request header, parsed without the protocol crate so
/// that unknown API keys can still be answered or logged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestPrefix {
    /// Raw API key (may be unknown).
    pub api_key: i16,
    /// Requested API version.
    pub api_version: i16,
    /// Correlation id echoed in the response.
    pub correlation_id: i32,
}

/// One request frame (without its 4-byte size), with the parsed header and the
/// body still encoded. `body` is a slice of the frame: decoding from it keeps
/// record bytes as slices of the same buffer (no copy).
#[derive(Debug)]
pub struct RequestFrame {
    /// API key, version and correlation id.
    pub prefix: RequestPrefix,
    /// The API key, known to the protocol crate.
    pub api_key: ApiKey,
    /// Full request header (client id, tagged fields).
    pub header: RequestHeader,
    /// The request body, starting right after the header.
    pub body: Bytes,
    /// The client's address (set by the connection; shown as a member's
    /// client host by the group coordinator).
    pub peer: Option<std::net::SocketAddr>,
    /// The listener and principal of the connection (set by the
    /// connection; None for requests made inside the broker).
    pub context: Option<std::sync::Arc<crate::security::RequestContext>>,
    /// What its handler noted for the request metrics.
    pub notes: RequestNotes,
}

/// What a handler notes on its request for Kafka's `RequestMetrics`: the
/// time it waited on others (the remote time) and, for a Fetch, whether a
/// follower or a consumer sent it.
#[derive(Debug, Default)]
pub struct RequestNotes {
    remote: std::cell::Cell<std::time::Duration>,
    fetch_follower: std::cell::Cell<Option<bool>>,
}

impl RequestNotes {
    /// Adds `waited` to the time the request waited on others (followers
    /// for acks=all, appends for a Fetch long poll).
    pub fn add_remote(&self, waited: std::time::Duration) {
        self.remote.set(self.remote.get().saturating_add(waited));
    }

    /// Gives the time the request waited on others.
    pub fn remote(&self) -> std::time::Duration {
        self.remote.get()
    }

    /// Notes a Fetch as a follower's (`true`) or a consumer's.
    pub fn set_fetch_follower(&self, follower: bool) {
        self.fetch_follower.set(Some(follower));
    }

    /// Gives what [`RequestNotes::set_fetch_follower`] noted (None: not a
    /// Fetch, or one refused before its kind was known).
    pub fn fetch_follower(&self) -> Option<bool> {
        self.fetch_follower.get()
    }
}

impl RequestPrefix {
    /// Reads the first 8 bytes of a frame. Errors with
    /// [`ProtocolError::Truncated`] when the frame is shorter.
    pub fn parse(frame: &[u8]) -> Result<RequestPrefix, ProtocolError> {
        if frame.len() < 8 {
            return Err(ProtocolError::Truncated("request header"));
        }
        Ok(RequestPrefix {
            api_key: i16::from_be_bytes([frame[0], frame[1]]),
            api_version: i16::from_be_bytes([frame[2], frame[3]]),
            correlation_id: i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]),
        })
    }
}

impl RequestFrame {
    /// Parses the header of `frame`. Unknown API keys give
    /// [`ProtocolError::UnknownApiKey`]; a malformed header gives
    /// [`ProtocolError::Malformed`].
    pub fn parse(frame: Bytes) -> Result<RequestFrame, ProtocolError> {
        let prefix = RequestPrefix::parse(&frame)?;
        let api_key = ApiKey::try_from(prefix.api_key)
            .map_err(|_| ProtocolError::UnknownApiKey(prefix.api_key))?;
        let header_version = api_key.request_header_version(prefix.api_version);
        let mut buf = frame;
        let header = RequestHeader::decode(&mut buf, header_version)
            .map_err(|e| ProtocolError::Malformed(format!("request header: {e}")))?;
        Ok(RequestFrame {
            prefix,
            api_key,
            header,
            body: buf,
            peer: None,
            context: None,
            notes: RequestNotes::default(),
        })
    }

    /// The name of the listener the request came in on (None for requests
    /// made inside the broker): answers name brokers by their endpoint on
    /// that listener, as Kafka's do.
    pub fn listener(&self) -> Option<&str> {
        self.context.as_deref().map(|c| &*c.listener)
    }

    /// Decodes the body as `T` at the request's version. Trailing bytes are
    /// tolerated (newer clients may add fields we skip), as Kafka does.
    pub fn decode<T: Decodable>(&self) -> Result<T, ProtocolError> {
        let mut buf = self.body.clone();
        T::decode(&mut buf, self.prefix.api_version).map_err(|e| {
            ProtocolError::Malformed(format!(
                "{:?} v{}: {e}",
                self.api_key, self.prefix.api_version
            ))
        })
    }
}

/// A piece of a response on the wire: bytes in memory, or a byte range of a
/// segment file sent with sendfile(2).
#[derive(Debug)]
pub enum ResponseChunk {
    /// Encoded bytes.
    Bytes(Bytes),
    /// A range of a `.log` file.
    File(FileRegion),
}

impl ResponseChunk {
    /// Length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            ResponseChunk::Bytes(b) => b.len() as u64,
            ResponseChunk::File(r) => r.len,
        }
    }

    /// True when the chunk has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A complete response frame (size prefix included) as chunks in wire order.
#[derive(Debug, Default)]
pub struct Response {
    /// Chunks to write in order.
    pub chunks: Vec<ResponseChunk>,
}

impl Response {
    /// Total bytes on the wire.
    pub fn len(&self) -> u64 {
        self.chunks.iter().map(ResponseChunk::len).sum()
    }

    /// True when the response has no bytes (never the case for a real frame).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Writes the response header for `api_key`/`version`: correlation id, and an
/// empty tagged-field section for flexible header versions.
pub fn put_response_header(buf: &mut BytesMut, api_key: ApiKey, version: i16, correlation_id: i32) {
    buf.put_i32(correlation_id);
    if api_key != ApiKey::ApiVersions && api_key.response_header_version(version) >= 1 {
        buf.put_u8(0);
    }
}

/// Encodes a complete response frame: size, header, body at `version`.
pub fn encode_response<T: Encodable>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &T,
) -> Result<Response, ProtocolError> {
    let size = body
        .compute_size(version)
        .map_err(|e| ProtocolError::Encode(format!("{api_key:?} v{version}: {e}")))?;
    let mut buf = BytesMut::with_capacity(size + 9);
    buf.put_i32(0);
    put_response_header(&mut buf, api_key, version, correlation_id);
    body.encode(&mut buf, version)
        .map_err(|e| ProtocolError::Encode(format!("{api_key:?} v{version}: {e}")))?;
    let len = (buf.len() - 4) as i32;
    buf[0..4].copy_from_slice(&len.to_be_bytes());
    Ok(Response {
        chunks: vec![ResponseChunk::Bytes(buf.freeze())],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::ApiVersionsResponse;
    use kafka_protocol::protocol::StrBytes;

    #[test]
    fn prefix_needs_eight_bytes() {
        assert!(RequestPrefix::parse(&[0, 18, 0]).is_err());
        let p = RequestPrefix::parse(&[0, 18, 0, 3, 0, 0, 0, 7]).unwrap();
        assert_eq!((p.api_key, p.api_version, p.correlation_id), (18, 3, 7));
    }

    #[test]
    fn unknown_api_key_is_reported() {
        let f = Bytes::from_static(&[0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff]);
        assert!(matches!(
            RequestFrame::parse(f),
            Err(ProtocolError::UnknownApiKey(0x7f00))
        ));
    }

    #[test]
    fn header_roundtrip_with_client_id() {
        let mut h = RequestHeader::default();
        h.request_api_key = ApiKey::Metadata as i16;
        h.request_api_version = 9;
        h.correlation_id = 42;
        h.client_id = Some(StrBytes::from_static_str("c"));
        let mut buf = BytesMut::new();
        kafka_protocol::protocol::encode_request_header_into_buffer(&mut buf, &h).unwrap();
        buf.put_slice(b"body");
        let f = RequestFrame::parse(buf.freeze()).unwrap();
        assert_eq!(f.header, h);
        assert_eq!(&f.body[..], b"body");
    }

    #[test]
    fn api_versions_uses_header_v0_even_when_flexible() {
        let r =
            encode_response(ApiKey::ApiVersions, 3, 5, &ApiVersionsResponse::default()).unwrap();
        let ResponseChunk::Bytes(b) = &r.chunks[0] else {
            panic!()
        };
        let size = i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        assert_eq!(size, b.len() - 4);
        assert_eq!(&b[4..8], &5i32.to_be_bytes());
        // body v3 starts with error_code i16 = 0 right after the correlation id
        assert_eq!(&b[8..10], &[0, 0]);
    }
}
