//! ApiVersions (key 18), v0–v4. Lists [`crate::protocol::SUPPORTED_APIS`]
//! with [`crate::protocol::advertised_range`] (Produce from v0, as Kafka 4.x).
//! An unsupported ApiVersions version is answered at v0 with
//! UNSUPPORTED_VERSION and the full list, so the client can retry at a version
//! we serve (KIP-511). The response header is always v0.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};

use super::{respond, HandlerResult, Outcome};
use crate::error::codes;
use crate::protocol::{advertised_range, encode_response, RequestFrame, SUPPORTED_APIS};

fn body(error_code: i16) -> ApiVersionsResponse {
    let mut r = ApiVersionsResponse::default();
    r.error_code = error_code;
    r.api_keys = SUPPORTED_APIS
        .iter()
        .map(|&(k, _, _)| {
            let (lo, hi) = advertised_range(k).unwrap_or_default();
            let mut v = ApiVersion::default();
            v.api_key = k as i16;
            v.min_version = lo;
            v.max_version = hi;
            v
        })
        .collect();
    r
}

/// Answers a supported ApiVersions request.
pub fn handle(frame: &RequestFrame) -> HandlerResult {
    // v3+ carries the client's software name/version; nothing to validate
    // beyond decoding (Kafka checks the strings' characters; we accept any).
    let _req: ApiVersionsRequest = frame.decode()?;
    Ok(respond(frame, &body(codes::NONE)))
}

/// Answers an ApiVersions request of a version we do not serve: v0 body,
/// UNSUPPORTED_VERSION, the supported list.
pub fn unsupported_version(frame: &RequestFrame) -> Outcome {
    match encode_response(
        ApiKey::ApiVersions,
        0,
        frame.prefix.correlation_id,
        &body(codes::UNSUPPORTED_VERSION),
    ) {
        Ok(r) => Outcome::Respond(r),
        Err(e) => Outcome::Close(e.to_string()),
    }
}
