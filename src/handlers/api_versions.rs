//! ApiVersions (key 18), v0–v4. Lists [`crate::protocol::SUPPORTED_APIS`]
//! with [`crate::protocol::advertised_range`] (Produce from v0, as Kafka 4.x).
//! v3+ add the features (KIP-584): `supported_features` from
//! [`crate::cluster::features::SUPPORTED`] (below v4 those whose minimum is
//! 0 are left out, KAFKA-17492, as Kafka 4.4 does), the image's
//! `finalized_features` (min = max = the level) and
//! `finalized_features_epoch` (the image's metadata offset).
//! An unsupported ApiVersions version is answered at v0 with
//! UNSUPPORTED_VERSION and the full list, so the client can retry at a version
//! we serve (KIP-511). The response header is always v0.

use std::rc::Rc;

use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;

use super::{respond, HandlerResult, Outcome};
use crate::cluster::features::SUPPORTED;
use crate::cluster::metadata::MetadataImage;
use crate::error::codes;
use crate::protocol::{advertised_range, encode_response, RequestFrame, SUPPORTED_APIS};
use crate::shard::Shard;

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

/// Adds the features of a v3+ answer at `version`.
fn with_features(
    mut r: ApiVersionsResponse,
    version: i16,
    image: &MetadataImage,
) -> ApiVersionsResponse {
    r.supported_features = SUPPORTED
        .iter()
        .filter(|(_, range, _)| version >= 4 || range.min != 0)
        .map(|(name, range, _)| {
            let mut f = SupportedFeatureKey::default();
            f.name = StrBytes::from_static_str(name);
            f.min_version = range.min;
            f.max_version = range.max;
            f
        })
        .collect();
    r.finalized_features = image
        .finalized_features
        .iter()
        .map(|(name, level)| {
            let mut f = FinalizedFeatureKey::default();
            f.name = StrBytes::from_string(name.clone());
            f.min_version_level = *level;
            f.max_version_level = *level;
            f
        })
        .collect();
    r.finalized_features_epoch = image.finalized_features_epoch();
    r
}

/// Answers a supported ApiVersions request.
pub fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    // v3+ carries the client's software name/version; nothing to validate
    // beyond decoding (Kafka checks the strings' characters; we accept any).
    let _req: ApiVersionsRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let mut r = body(codes::NONE);
    if version >= 3 {
        r = with_features(r, version, &shard.metadata());
    }
    Ok(respond(frame, &r))
}

/// Answers an ApiVersions request of a version we do not serve: v0 body,
/// UNSUPPORTED_VERSION, the supported list.
pub fn unsupported_version(frame: &RequestFrame) -> Outcome {
    let r = body(codes::UNSUPPORTED_VERSION);
    super::count_errors(frame, &r);
    match encode_response(ApiKey::ApiVersions, 0, frame.prefix.correlation_id, &r) {
        Ok(r) => Outcome::Respond(r),
        Err(e) => Outcome::Close(e.to_string()),
    }
}
