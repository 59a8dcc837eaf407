//! FindCoordinator (key 10), v0–v6 (v4+: batched `coordinator_keys`, KIP-699; v5 only allows
//! TRANSACTION_ABORTABLE; v6 share-group keys, type 2, get INVALID_REQUEST as on Kafka 4.4
//! without share groups).
//! Every group's coordinator is this broker; the connection's shard forwards
//! group requests to the owning shard itself. The first group lookup creates
//! `__consumer_offsets` (`offsets.topic.num.partitions`, compacted), as Kafka
//! does; the first transaction coordinator lookup (key type 1) creates
//! `__transaction_state` the same way.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError as E;

use super::{respond, with_controller, HandlerResult};
use crate::error::{CoordinatorLookupError, KafkaCode, MetadataError};
use crate::group::OFFSETS_TOPIC;
use crate::protocol::RequestFrame;
use crate::shard::Shard;
use crate::txn::TRANSACTION_STATE_TOPIC;

/// Creates `__consumer_offsets` when missing. Errors with the
/// [`CoordinatorLookupError`] (COORDINATOR_NOT_AVAILABLE).
pub async fn ensure_offsets_topic(shard: &Rc<Shard>) -> Result<(), CoordinatorLookupError> {
    let g = &shard.config.group;
    let (n, seg) = (g.offsets_topic_partitions, g.offsets_topic_segment_bytes);
    ensure_internal_topic(shard, OFFSETS_TOPIC, n, seg).await
}

/// Creates `__transaction_state` when missing
/// (`transaction.state.log.num.partitions`,
/// `transaction.state.log.segment.bytes`). Errors with the
/// [`CoordinatorLookupError`] (COORDINATOR_NOT_AVAILABLE).
pub async fn ensure_transaction_state_topic(
    shard: &Rc<Shard>,
) -> Result<(), CoordinatorLookupError> {
    let t = &shard.config.txn;
    let (n, seg) = (t.state_log_partitions, t.state_log_segment_bytes);
    ensure_internal_topic(shard, TRANSACTION_STATE_TOPIC, n, seg).await
}

/// Creates a compacted internal topic when missing, as Kafka does on the
/// first coordinator lookup. Errors with `CreateFailed` or
/// `ControllerUnavailable` (COORDINATOR_NOT_AVAILABLE).
async fn ensure_internal_topic(
    shard: &Rc<Shard>,
    name: &'static str,
    partitions: i32,
    segment_bytes: u64,
) -> Result<(), CoordinatorLookupError> {
    if shard.metadata().topic(name).is_some() {
        return Ok(());
    }
    let mut configs = BTreeMap::new();
    configs.insert("cleanup.policy".to_string(), "compact".to_string());
    configs.insert("segment.bytes".to_string(), segment_bytes.to_string());
    let r = with_controller(shard, move |c| {
        match c.create_topic(name, partitions, configs, false) {
            Ok(_) => Ok(true),
            Err(MetadataError::TopicAlreadyExists { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    })
    .await;
    match r {
        Ok(Ok(true)) => {
            log::info!("created {name} with {partitions} partitions");
            Ok(())
        }
        Ok(Ok(false)) => Ok(()),
        Ok(Err(source)) => {
            log::error!("cannot create {name}: {source}");
            Err(CoordinatorLookupError::CreateFailed {
                topic: name,
                source,
            })
        }
        Err(source) => Err(CoordinatorLookupError::ControllerUnavailable {
            topic: name,
            source,
        }),
    }
}

/// Answers FindCoordinator.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: FindCoordinatorRequest = frame.decode()?;
    let version = frame.prefix.api_version;
    let image = shard.metadata();
    let (host, port) = image
        .brokers
        .first()
        .map(|b| (b.host.clone(), b.port))
        .unwrap_or_default();
    let node = image.controller_id;
    let code = match req.key_type {
        0 => ensure_offsets_topic(shard)
            .await
            .map_or_else(|e| e.code(), |()| 0),
        1 => ensure_transaction_state_topic(shard)
            .await
            .map_or_else(|e| e.code(), |()| 0),
        _ => E::InvalidRequest.code(),
    };
    let mut resp = FindCoordinatorResponse::default();
    if version >= 4 {
        resp.coordinators = req
            .coordinator_keys
            .iter()
            .map(|k| {
                let mut c = Coordinator::default();
                c.key = k.clone();
                c.error_code = code;
                if code == 0 {
                    c.node_id = BrokerId(node);
                    c.host = StrBytes::from_string(host.clone());
                    c.port = port;
                } else {
                    c.node_id = BrokerId(-1);
                    c.port = -1;
                }
                c
            })
            .collect();
    } else {
        resp.error_code = code;
        if code == 0 {
            resp.node_id = BrokerId(node);
            resp.host = StrBytes::from_string(host);
            resp.port = port;
        } else {
            resp.node_id = BrokerId(-1);
            resp.port = -1;
            if version >= 1 {
                resp.error_message = Some(StrBytes::from_static_str(
                    "The coordinator is not available.",
                ));
            }
        }
    }
    Ok(respond(frame, &resp))
}
