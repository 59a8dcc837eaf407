//! Client requests: the byte stream of a connection, cut into frames as the
//! connection does, each header parsed and its body decoded at its version.

use bytes::{Buf, Bytes};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};

use super::Violation;
use crate::handlers::{produce_legacy, unserved_version, Outcome};
use crate::net::connection::frame_size;
use crate::protocol::frame::RequestPrefix;
use crate::protocol::{RequestFrame, ResponseChunk};
use crate::storage::{replica_batches, validate_batches, ValidatedBatch};

/// Kafka's default `socket.request.max.bytes` (100 MiB), the frame bound.
const MAX_FRAME: usize = 104_857_600;

/// Kafka's default `message.max.bytes` (bytes).
const MAX_MESSAGE: usize = 1_048_588;

/// Takes the bytes a client sends on a connection (size-prefixed frames);
/// cuts and parses every whole frame as the connection does
/// (`net::connection::frame_size`, `RequestFrame::parse`), answers the
/// versions not served as dispatch does without a shard
/// (`handlers::unserved_version`: Produce v0–v2, ApiVersions, others) and
/// decodes the body of a served one with the protocol crate at its version,
/// then validates each Produce partition's records as the partition does.
/// Stops where the connection would close.
pub fn request_stream(data: &[u8]) -> Result<(), Violation> {
    let mut buf = Bytes::copy_from_slice(data);
    loop {
        let size = match frame_size(&buf, MAX_FRAME) {
            Ok(Some(size)) => size,
            Ok(None) | Err(_) => return Ok(()),
        };
        if buf.len() < 4 + size {
            return Ok(());
        }
        buf.advance(4);
        let frame = buf.split_to(size);
        let Ok(request) = RequestFrame::parse(frame) else {
            return Ok(());
        };
        if !request_frame(&request)? {
            return Ok(());
        }
    }
}

/// One parsed request; gives false when the connection would be closed.
fn request_frame(frame: &RequestFrame) -> Result<bool, Violation> {
    if let Some(outcome) = unserved_version(frame) {
        return check_outcome(frame, outcome);
    }
    let mut body = frame.body.clone();
    match RequestKind::decode(frame.api_key, &mut body, frame.prefix.api_version) {
        Ok(RequestKind::Produce(req)) => {
            for t in &req.topic_data {
                for p in &t.partition_data {
                    if let Some(records) = &p.records {
                        produce_records(records)?;
                    }
                }
            }
            Ok(true)
        }
        Ok(_) => Ok(true),
        Err(_) => Ok(false),
    }
}

/// The answer to an unserved version must be one whole response frame
/// whose size field counts the rest and whose correlation id is the
/// request's.
fn check_outcome(frame: &RequestFrame, outcome: Outcome) -> Result<bool, Violation> {
    let response = match outcome {
        Outcome::Respond(r) => r,
        Outcome::NoResponse => return Ok(true),
        Outcome::Throttled(t) => match t.response {
            Some(r) => r,
            None => return Ok(true),
        },
        Outcome::Close(_) => return Ok(false),
    };
    let mut bytes = Vec::new();
    for chunk in &response.chunks {
        match chunk {
            ResponseChunk::Bytes(b) => bytes.extend_from_slice(b),
            ResponseChunk::File(_) => {
                return Err(format!(
                    "{:?}: a file chunk in an error answer",
                    frame.api_key
                ))
            }
        }
    }
    let size = bytes
        .first_chunk::<4>()
        .map(|s| i32::from_be_bytes(*s) as i64);
    if size != Some(bytes.len() as i64 - 4) {
        return Err(format!(
            "{:?} v{}: response size field {size:?} for {} bytes",
            frame.api_key,
            frame.prefix.api_version,
            bytes.len()
        ));
    }
    if bytes.get(4..8) != Some(&frame.prefix.correlation_id.to_be_bytes()[..]) {
        return Err(format!("{:?}: correlation id not echoed", frame.api_key));
    }
    Ok(true)
}

/// The records of one Produce partition, validated as the partition does
/// (client rules) and as a follower does (replica rules); every batch
/// accepted must lie inside the records, one after the other.
fn produce_records(records: &Bytes) -> Result<(), Violation> {
    if let Ok(batches) = validate_batches(records, MAX_MESSAGE) {
        check_batches(records, &batches, "validate_batches")?;
    }
    if let Ok(batches) = replica_batches(records) {
        check_batches(records, &batches, "replica_batches")?;
    }
    Ok(())
}

/// Accepted batches lie inside `records`, in order, without overlap, each
/// at least a batch header long and as long as its length field says.
pub(super) fn check_batches(
    records: &[u8],
    batches: &[ValidatedBatch],
    what: &str,
) -> Result<(), Violation> {
    let mut end = 0usize;
    for b in batches {
        if b.position != end
            || b.position + b.size > records.len()
            || b.size < crate::storage::RECORD_BATCH_HEADER_BYTES
            || b.header.total_size() != b.size
        {
            return Err(format!(
                "{what}: batch at {} of {} bytes (previous end {end}, header says {}) in {} bytes",
                b.position,
                b.size,
                b.header.total_size(),
                records.len()
            ));
        }
        end = b.position + b.size;
    }
    Ok(())
}

/// Takes a version selector byte (0–2 after `% 3`) and a Produce v0–v2
/// request body; answers it as the broker does (`handlers::produce_legacy`:
/// UNSUPPORTED_VERSION per partition, or a close), then runs each
/// partition's message set through what reads legacy magic 0/1 messages:
/// Produce validation (which refuses them), the follower's check, and the
/// record decoder of stored bytes (`storage::records::decode_batches`,
/// which the group and transaction loaders and ListOffsets use).
pub fn legacy_produce(data: &[u8]) -> Result<(), Violation> {
    let Some((&selector, body)) = data.split_first() else {
        return Ok(());
    };
    let version = i16::from(selector % 3);
    let frame = RequestFrame {
        prefix: RequestPrefix {
            api_key: ApiKey::Produce as i16,
            api_version: version,
            correlation_id: 7,
        },
        api_key: ApiKey::Produce,
        header: RequestHeader::default(),
        body: Bytes::copy_from_slice(body),
        peer: None,
        context: None,
        notes: Default::default(),
    };
    match unserved_version(&frame) {
        Some(outcome) => {
            check_outcome(&frame, outcome)?;
        }
        None => return Err(format!("Produce v{version} is served")),
    }
    let Ok(req) = produce_legacy::decode(&frame.body) else {
        return Ok(());
    };
    for t in &req.topic_data {
        for p in &t.partition_data {
            let Some(records) = &p.records else { continue };
            produce_records(records)?;
            let mut b = records.clone();
            let _ = crate::storage::records::decode_batches(&mut b);
        }
    }
    Ok(())
}
