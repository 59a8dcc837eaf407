//! The wire layer's error: framing and header/body decoding.

/// Errors of the wire layer: framing and header/body decoding. Most of these
/// close the one connection that sent the request (as Kafka's SocketServer does).
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// Fewer bytes than the structure needs.
    #[error("truncated {0}")]
    Truncated(&'static str),
    /// An API key unknown to the protocol.
    #[error("unknown API key {0}")]
    UnknownApiKey(i16),
    /// A known API at a version this broker does not serve.
    #[error("unsupported version {version} of API key {api_key}")]
    UnsupportedVersion {
        /// API key.
        api_key: i16,
        /// Requested version.
        version: i16,
    },
    /// A body or header that does not decode.
    #[error("malformed request: {0}")]
    Malformed(String),
    /// A frame larger than `socket.request.max.bytes`, or with a negative size.
    #[error("frame of {size} bytes is outside [8, {max}] (socket.request.max.bytes; sasl.server.max.receive.size before authentication)")]
    FrameSize {
        /// Size read from the wire.
        size: i64,
        /// The configured maximum.
        max: usize,
    },
    /// A response could not be encoded (a bug; the connection is closed).
    #[error("cannot encode response: {0}")]
    Encode(String),
}
