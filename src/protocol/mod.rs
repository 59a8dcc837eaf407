//! The Kafka wire protocol: framing, request headers, the table of supported
//! API versions and response encoding. Message bodies are decoded and encoded
//! with the `kafka-protocol` crate (pinned in Cargo.toml); everything that
//! touches that crate's types outside `handlers/` goes through this module.

pub mod error;
pub mod frame;
pub mod versions;

pub use error::ProtocolError;
pub use frame::{encode_response, RequestFrame, Response, ResponseChunk};
pub use versions::{advertised_range, supported_range, SUPPORTED_APIS};

/// Re-export of the pinned protocol crate so other modules name one path.
pub use kafka_protocol as kp;

/// A record of a non-idempotent, non-transactional batch, for encoding with
/// the protocol crate's `RecordBatchEncoder`. `offset_delta` counts from 0
/// within the batch; the sequence is chosen so that the encoder keeps every
/// such record in one batch (it splits where `offset - sequence` changes) and
/// the batch's base sequence is -1 (no producer).
pub fn plain_record(
    offset_delta: i64,
    timestamp_ms: i64,
    key: Option<bytes::Bytes>,
    value: Option<bytes::Bytes>,
) -> kafka_protocol::records::Record {
    kafka_protocol::records::Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: kafka_protocol::records::TimestampType::Creation,
        offset: offset_delta,
        sequence: offset_delta as i32 - 1,
        timestamp: timestamp_ms,
        key,
        value,
        headers: Default::default(),
    }
}
