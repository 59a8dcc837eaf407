//! UpdateFeatures (key 57, v0–2, KIP-584/KIP-778/KIP-1022): the updates go
//! to the active controller (`cluster::control::features`), which checks
//! them as Kafka's `FeatureControlManager` does and writes FeatureLevel
//! records, all or none. The answer carries the outcome as the top-level
//! error; below v2 a success lists every feature of the request in
//! `results` with code 0, a refusal lists none (as Kafka 4.4 answers,
//! checked by tests/features.rs). v0's
//! `allow_downgrade` is a safe downgrade; v1+ carry `upgrade_type`.
//! Without ALTER on the cluster the answer is CLUSTER_AUTHORIZATION_FAILED.

use std::rc::Rc;

use kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use kafka_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{ask_controller, respond, HandlerResult};
use crate::acl::model::Operation;
use crate::cluster::control::features::{FeatureUpdate, UpgradeType};
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::cluster::error::{ControllerCallError, MetadataError};
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

fn answer(
    frame: &RequestFrame,
    names: &[String],
    code: i16,
    message: Option<String>,
) -> UpdateFeaturesResponse {
    let mut resp = UpdateFeaturesResponse::default();
    resp.error_code = code;
    resp.error_message = message.clone().map(StrBytes::from_string);
    if frame.prefix.api_version < 2 && code == codes::NONE {
        resp.results = names
            .iter()
            .map(|n| {
                let mut r = UpdatableFeatureResult::default();
                r.feature = StrBytes::from_string(n.clone());
                r.error_code = code;
                r.error_message = message.clone().map(StrBytes::from_string);
                r
            })
            .collect();
    }
    resp
}

/// Answers UpdateFeatures through the active controller.
pub async fn handle(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: UpdateFeaturesRequest = frame.decode()?;
    let v0 = frame.prefix.api_version == 0;
    let updates: Vec<FeatureUpdate> = req
        .feature_updates
        .iter()
        .map(|u| FeatureUpdate {
            feature: u.feature.to_string(),
            level: u.max_version_level,
            upgrade_type: match (v0, u.allow_downgrade) {
                (true, true) => UpgradeType::SafeDowngrade,
                (true, false) => UpgradeType::Upgrade,
                (false, _) => UpgradeType::from_code(u.upgrade_type),
            },
        })
        .collect();
    let names: Vec<String> = updates.iter().map(|u| u.feature.clone()).collect();
    if !Access::of(shard, frame).cluster(Operation::Alter) {
        let resp = answer(
            frame,
            &names,
            codes::CLUSTER_AUTHORIZATION_FAILED,
            Some("Cluster authorization failed.".into()),
        );
        return Ok(respond(frame, &resp));
    }
    let reply = ask_controller(
        shard,
        ControllerRequest::UpdateFeatures {
            updates,
            validate_only: req.validate_only,
        },
    )
    .await;
    let resp = match reply {
        Ok(ControllerReply::UpdateFeatures(Ok(()))) => answer(frame, &names, codes::NONE, None),
        // Kafka's controller words a refusal for the whole request.
        Ok(ControllerReply::UpdateFeatures(Err(e))) => answer(
            frame,
            &names,
            e.code(),
            Some(format!(
                "The update failed for all features since the following feature had an error: {e}"
            )),
        ),
        Ok(_) => {
            let e = MetadataError::from(ControllerCallError::UnexpectedReply);
            answer(frame, &names, e.code(), Some(e.to_string()))
        }
        Err(e) => answer(frame, &names, e.code(), Some(e.to_string())),
    };
    Ok(respond(frame, &resp))
}
