//! Requests for APIs or versions this broker does not serve. Clients learn the
//! supported set from ApiVersions and do not send these. When one arrives
//! anyway:
//! * an API whose response has a top-level error code (
//!   transactions, quotas, telemetry, …) at a version the protocol crate
//!   knows gets a well-formed response with UNSUPPORTED_VERSION (35);
//! * anything else (an API key unknown to the protocol, or a response made
//!   only of per-item results) closes the connection with a warning, as
//!   Kafka's own broker does for requests it cannot parse.

use kafka_protocol::messages::*;

use super::{respond, Outcome};
use crate::error::codes;
use crate::protocol::{supported_range, RequestFrame};

macro_rules! error_response {
    ($frame:expr, $( $key:ident => $req:ty, $resp:ty );* $(;)?) => {
        match $frame.api_key {
            $(
                ApiKey::$key => {
                    if $frame.decode::<$req>().is_err() {
                        return None;
                    }
                    let mut r = <$resp>::default();
                    r.error_code = codes::UNSUPPORTED_VERSION;
                    Some(respond($frame, &r))
                }
            )*
            _ => None,
        }
    };
}

/// A well-formed UNSUPPORTED_VERSION response for APIs with a top-level error
/// code, if the protocol crate knows the API at that version.
fn error_reply(frame: &RequestFrame) -> Option<Outcome> {
    let v = frame.prefix.api_version;
    let known = frame.api_key.valid_versions();
    if v < known.min || v > known.max {
        return None;
    }
    error_response!(frame,
        ListTransactions => ListTransactionsRequest, ListTransactionsResponse;
        EndTxn => EndTxnRequest, EndTxnResponse;
        DescribeClientQuotas => DescribeClientQuotasRequest, DescribeClientQuotasResponse;
        ConsumerGroupHeartbeat => ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse;
        ShareGroupHeartbeat => ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse;
        GetTelemetrySubscriptions => GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse;
        PushTelemetry => PushTelemetryRequest, PushTelemetryResponse;
        UpdateFeatures => UpdateFeaturesRequest, UpdateFeaturesResponse;
        DescribeDelegationToken => DescribeDelegationTokenRequest, DescribeDelegationTokenResponse;
    )
}

/// Answers or closes, with a reason naming the API and version.
pub fn handle(frame: &RequestFrame) -> Outcome {
    if supported_range(frame.api_key).is_none() {
        if let Some(Outcome::Respond(r)) = error_reply(frame) {
            log::debug!(
                "answered {:?} v{} with UNSUPPORTED_VERSION",
                frame.api_key,
                frame.prefix.api_version
            );
            return Outcome::Respond(r);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::{BufMut, BytesMut};
    use kafka_protocol::protocol::{Decodable, Encodable};

    #[test]
    fn describe_delegation_token_gets_unsupported_version() {
        let mut h = RequestHeader::default();
        h.request_api_key = ApiKey::DescribeDelegationToken as i16;
        h.request_api_version = 1;
        h.correlation_id = 3;
        let mut buf = BytesMut::new();
        kafka_protocol::protocol::encode_request_header_into_buffer(&mut buf, &h).unwrap();
        let req = DescribeDelegationTokenRequest::default();
        req.encode(&mut buf, 1).unwrap();
        let frame = RequestFrame::parse(buf.freeze()).unwrap();
        let Outcome::Respond(r) = handle(&frame) else {
            panic!("expected a response")
        };
        let mut out = BytesMut::new();
        for c in r.chunks {
            if let crate::protocol::ResponseChunk::Bytes(b) = c {
                out.put_slice(&b);
            }
        }
        let mut b = out.freeze().slice(8..);
        let resp = DescribeDelegationTokenResponse::decode(&mut b, 1).unwrap();
        assert_eq!(resp.error_code, 35);
    }
}
