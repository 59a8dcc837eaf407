//! AlterClientQuotas (key 49, v0–1, KIP-546): the entities' changes go to
//! the active controller (`cluster::control::quota`), which checks them as
//! Kafka's `ClientQuotaControlManager` does and writes ClientQuota records;
//! the answer is per entity, once every shard here applied the change (so
//! the quota is enforced on every connection from the answer on). Without
//! ALTER_CONFIGS on the cluster every entity is answered
//! CLUSTER_AUTHORIZATION_FAILED, as Kafka's `getErrorResponse` does; a
//! controller that cannot be reached fails every entity with its code.

use std::rc::Rc;

use kafka_protocol::messages::alter_client_quotas_response::{EntityData, EntryData};
use kafka_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{ask_controller, respond, HandlerResult};
use crate::acl::model::Operation;
use crate::cluster::control::quota::QuotaAlteration;
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::cluster::error::{ControllerCallError, MetadataError};
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::quota::model::EntityName;
use crate::shard::Shard;

fn entry(entity: &[(String, EntityName)], code: i16, message: Option<String>) -> EntryData {
    let mut e = EntryData::default();
    e.entity = entity
        .iter()
        .map(|(t, n)| {
            let mut d = EntityData::default();
            d.entity_type = StrBytes::from_string(t.clone());
            d.entity_name = n.clone().map(StrBytes::from_string);
            d
        })
        .collect();
    e.error_code = code;
    e.error_message = message.map(StrBytes::from_string);
    e
}

/// Answers AlterClientQuotas through the active controller.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: AlterClientQuotasRequest = frame.decode()?;
    let alterations: Vec<QuotaAlteration> = req
        .entries
        .iter()
        .map(|e| QuotaAlteration {
            entity: e
                .entity
                .iter()
                .map(|d| {
                    (
                        d.entity_type.to_string(),
                        d.entity_name.as_ref().map(|n| n.to_string()),
                    )
                })
                .collect(),
            ops: e
                .ops
                .iter()
                .map(|o| (o.key.to_string(), (!o.remove).then_some(o.value)))
                .collect(),
        })
        .collect();
    let mut resp = AlterClientQuotasResponse::default();
    if !Access::of(shard, frame).cluster(Operation::AlterConfigs) {
        resp.entries = alterations
            .iter()
            .map(|a| {
                entry(
                    &a.entity,
                    codes::CLUSTER_AUTHORIZATION_FAILED,
                    Some("Cluster authorization failed.".into()),
                )
            })
            .collect();
        return Ok(respond(frame, &resp));
    }
    let reply = ask_controller(
        shard,
        ControllerRequest::AlterClientQuotas {
            alterations: alterations.clone(),
            validate_only: req.validate_only,
        },
    )
    .await;
    let results = match reply {
        Ok(ControllerReply::AlterClientQuotas(r)) => Ok(r),
        Ok(_) => Err(MetadataError::from(ControllerCallError::UnexpectedReply)),
        Err(e) => Err(e),
    };
    resp.entries = match results {
        Ok(r) => r
            .iter()
            .map(|(entity, r)| match r {
                Ok(()) => entry(entity, 0, None),
                Err(e) => entry(entity, e.code(), Some(e.to_string())),
            })
            .collect(),
        Err(e) => alterations
            .iter()
            .map(|a| entry(&a.entity, e.code(), Some(e.to_string())))
            .collect(),
    };
    Ok(respond(frame, &resp))
}
