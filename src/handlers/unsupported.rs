//! Requests for APIs or versions this broker does not serve. Clients learn the
//! supported set from ApiVersions and do not send these; when one arrives
//! anyway the connection is closed with a warning, as Kafka's SocketServer does
//! for requests it cannot parse (see docs/compatibility.md).

use super::Outcome;
use crate::protocol::{supported_range, RequestFrame};

/// Closes the connection with a reason naming the API and version.
pub fn handle(frame: &RequestFrame) -> Outcome {
    let v = frame.prefix.api_version;
    let reason = match supported_range(frame.api_key) {
        Some((lo, hi)) => format!(
            "{:?} v{v} is not supported (supported: v{lo}-v{hi})",
            frame.api_key
        ),
        None => format!(
            "{:?} (key {}) is not supported by this broker",
            frame.api_key, frame.prefix.api_key
        ),
    };
    Outcome::Close(reason)
}
