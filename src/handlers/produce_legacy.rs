//! Produce v0–v2: listed by ApiVersions (Kafka 4.x lists Produce from v0 so
//! that librdkafka before 2.10 keeps compressing, KAFKA-18659) but not served.
//! Each partition of such a request is answered with UNSUPPORTED_VERSION (35)
//! in a well-formed v0–v2 response; with acks=0 (no response expected) the
//! connection is closed, as for any failed acks=0 produce. Nothing is
//! appended. See docs/decisions/produce-v0-v2-listed.md.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ProduceRequest};
use kafka_protocol::protocol::Decodable;

use super::Outcome;
use crate::error::codes;
use crate::protocol::{frame::put_response_header, RequestFrame, Response, ResponseChunk};

/// The Produce v0–v2 request body, decoded as v3: v3 only adds the leading
/// nullable `transactional_id`, so a null one (-1) is put in front. Errors
/// with the decoder's message when the body is malformed.
pub(crate) fn decode(body: &Bytes) -> Result<ProduceRequest, String> {
    let mut buf = BytesMut::with_capacity(body.len() + 2);
    buf.put_i16(-1);
    buf.put_slice(body);
    let mut b = buf.freeze();
    ProduceRequest::decode(&mut b, 3).map_err(|e| e.to_string())
}

/// Encodes the v0–v2 response: per partition index, error code and base
/// offset (-1), plus the log append time (-1) from v2, then the throttle
/// time from v1.
fn encode(req: &ProduceRequest, version: i16, correlation_id: i32) -> Response {
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    put_response_header(&mut buf, ApiKey::Produce, version, correlation_id);
    buf.put_i32(req.topic_data.len() as i32);
    for t in &req.topic_data {
        let name = t.name.0.as_bytes();
        buf.put_i16(name.len() as i16);
        buf.put_slice(name);
        buf.put_i32(t.partition_data.len() as i32);
        for p in &t.partition_data {
            buf.put_i32(p.index);
            buf.put_i16(codes::UNSUPPORTED_VERSION);
            buf.put_i64(-1);
            if version >= 2 {
                buf.put_i64(-1);
            }
        }
    }
    if version >= 1 {
        buf.put_i32(0);
    }
    let len = (buf.len() - 4) as i32;
    buf[0..4].copy_from_slice(&len.to_be_bytes());
    Response {
        chunks: vec![ResponseChunk::Bytes(buf.freeze())],
    }
}

/// Answers a Produce v0–v2 request: UNSUPPORTED_VERSION for every partition,
/// or closes the connection (malformed body, or acks=0).
pub fn handle(frame: &RequestFrame) -> Outcome {
    let v = frame.prefix.api_version;
    let req = match decode(&frame.body) {
        Ok(r) => r,
        Err(e) => return Outcome::Close(format!("Produce v{v}: {e}")),
    };
    if req.acks == 0 {
        return Outcome::Close(format!(
            "Produce v{v} is not supported (v3 and later are); acks=0, so closing"
        ));
    }
    log::debug!("answered Produce v{v} with UNSUPPORTED_VERSION");
    crate::metrics::shard::count_errors(ApiKey::Produce as i16, |each| {
        for _ in req.topic_data.iter().flat_map(|t| t.partition_data.iter()) {
            each(codes::UNSUPPORTED_VERSION);
        }
    });
    Outcome::Respond(encode(&req, v, frame.prefix.correlation_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Buf;

    fn v0_body() -> Bytes {
        let mut b = BytesMut::new();
        b.put_i16(1); // acks
        b.put_i32(1000); // timeout
        b.put_i32(1); // topics
        b.put_i16(1);
        b.put_slice(b"t");
        b.put_i32(1); // partitions
        b.put_i32(4);
        b.put_i32(0); // empty message set
        b.freeze()
    }

    #[test]
    fn every_partition_gets_unsupported_version() {
        let req = decode(&v0_body()).unwrap();
        for version in 0..=2i16 {
            let r = encode(&req, version, 7);
            let ResponseChunk::Bytes(b) = &r.chunks[0] else {
                panic!("memory chunk expected")
            };
            let mut b = b.clone();
            assert_eq!(b.get_i32() as usize, b.remaining());
            assert_eq!(b.get_i32(), 7); // correlation id
            assert_eq!(b.get_i32(), 1);
            assert_eq!(b.get_i16(), 1);
            assert_eq!(b.get_u8(), b't');
            assert_eq!(b.get_i32(), 1);
            assert_eq!(b.get_i32(), 4);
            assert_eq!(b.get_i16(), codes::UNSUPPORTED_VERSION);
            assert_eq!(b.get_i64(), -1);
            let rest = match version {
                0 => 0,
                1 => 4,
                _ => 12,
            };
            assert_eq!(b.remaining(), rest, "v{version}");
        }
    }

    #[test]
    fn malformed_body_is_an_error() {
        assert!(decode(&Bytes::from_static(&[0, 1, 0])).is_err());
    }
}
