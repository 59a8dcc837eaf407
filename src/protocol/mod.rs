//! The Kafka wire protocol: framing, request headers, the table of supported
//! API versions and response encoding. Message bodies are decoded and encoded
//! with the `kafka-protocol` crate (pinned in Cargo.toml); everything that
//! touches that crate's types outside `handlers/` goes through this module.

pub mod frame;
pub mod versions;

pub use frame::{encode_response, RequestFrame, Response, ResponseChunk};
pub use versions::{supported_range, SUPPORTED_APIS};

/// Re-export of the pinned protocol crate so other modules name one path.
pub use kafka_protocol as kp;
