//! Request dispatch: one file per Kafka API. Dispatch reads the versions table
//! in `protocol::versions`, decodes the body with the protocol crate, calls the
//! API's handler and encodes its response.

mod api_versions;
mod create_partitions;
mod create_topics;
mod delete_topics;
mod describe_cluster;
pub mod fetch;
mod list_offsets;
mod metadata;
pub mod produce;
mod unsupported;

use std::rc::Rc;
use std::sync::Arc;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::Encodable;

use crate::cluster::controller::Controller;
use crate::cluster::metadata::MetadataImage;
use crate::error::{ProtocolError, ShardError};
use crate::protocol::{encode_response, supported_range, RequestFrame, Response};
use crate::shard::Shard;

/// What the connection does after a request.
#[derive(Debug)]
pub enum Outcome {
    /// Write this response.
    Respond(Response),
    /// Write nothing (Produce with acks=0).
    NoResponse,
    /// Close the connection, logging the reason at warn (malformed input, or a
    /// failed acks=0 produce, as Kafka does so the client refreshes metadata).
    Close(String),
}

/// Encodes `body` as the response to `frame`, or closes the connection when
/// encoding fails.
pub fn respond<T: Encodable>(frame: &RequestFrame, body: &T) -> Outcome {
    match encode_response(
        frame.api_key,
        frame.prefix.api_version,
        frame.prefix.correlation_id,
        body,
    ) {
        Ok(r) => Outcome::Respond(r),
        Err(e) => Outcome::Close(e.to_string()),
    }
}

/// Handles one request on `shard` (the shard that owns the connection).
pub async fn dispatch(shard: &Rc<Shard>, frame: RequestFrame) -> Outcome {
    let version = frame.prefix.api_version;
    let supported =
        supported_range(frame.api_key).is_some_and(|(lo, hi)| (lo..=hi).contains(&version));
    if !supported {
        if frame.api_key == ApiKey::ApiVersions {
            return api_versions::unsupported_version(&frame);
        }
        return unsupported::handle(&frame);
    }
    let result = match frame.api_key {
        ApiKey::ApiVersions => api_versions::handle(&frame),
        ApiKey::Metadata => metadata::handle(shard, &frame).await,
        ApiKey::DescribeCluster => describe_cluster::handle(shard, &frame),
        ApiKey::CreateTopics => create_topics::handle(shard, &frame).await,
        ApiKey::DeleteTopics => delete_topics::handle(shard, &frame).await,
        ApiKey::CreatePartitions => create_partitions::handle(shard, &frame).await,
        ApiKey::Produce => produce::handle(shard, &frame).await,
        ApiKey::Fetch => fetch::handle(shard, &frame).await,
        ApiKey::ListOffsets => list_offsets::handle(shard, &frame).await,
        _ => return unsupported::handle(&frame),
    };
    match result {
        Ok(outcome) => outcome,
        Err(e) => Outcome::Close(e.to_string()),
    }
}

/// Runs `f` on the controller (shard 0), then publishes the resulting image
/// to every shard before returning, so a client that gets a successful
/// CreateTopics response can produce at once on any connection.
pub async fn with_controller<R, F>(shard: &Rc<Shard>, f: F) -> Result<R, ShardError>
where
    R: Send + 'static,
    F: FnOnce(&mut Controller) -> R + Send + 'static,
{
    shard
        .invoke_on(0, move |s| async move {
            let (r, image, changed): (R, Arc<MetadataImage>, bool) = {
                let Some(c) = s.controller.as_ref() else {
                    return Err(ShardError::Unavailable(0));
                };
                let mut c = c.borrow_mut();
                let before = c.image().version;
                let r = f(&mut c);
                let image = c.image();
                let changed = image.version != before;
                (r, image, changed)
            };
            if changed {
                s.publish_metadata(image).await?;
            }
            Ok(r)
        })
        .await?
}

/// Decode errors close the connection; this alias keeps handler signatures short.
pub type HandlerResult = Result<Outcome, ProtocolError>;
