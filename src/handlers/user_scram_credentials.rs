//! DescribeUserScramCredentials (key 50, v0) and AlterUserScramCredentials
//! (key 51, v0), KIP-554: the SCRAM credentials of the metadata log.
//!
//! * Describe answers from this broker's image: per user its mechanisms
//!   and iterations (never a salt or key); all users when the request
//!   names none; a named user without credentials is RESOURCE_NOT_FOUND
//!   (91), a user named twice DUPLICATE_RESOURCE (92).
//! * Alter goes to the active controller (`cluster::control::scram`),
//!   which checks each user's changes (UNACCEPTABLE_CREDENTIAL (93),
//!   UNSUPPORTED_SASL_MECHANISM (33), RESOURCE_NOT_FOUND,
//!   DUPLICATE_RESOURCE) and writes the records of the users without an
//!   error; the answer is per user, once applied here. A controller that
//!   cannot be reached fails every user with its code.

use std::rc::Rc;

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{ask_controller, respond, HandlerResult};
use crate::acl::model::{Operation, ResourceType, CLUSTER_NAME};
use crate::cluster::control::scram::{ScramAlterError, ScramDeletion, ScramUpsertion};
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::cluster::error::{ControllerCallError, MetadataError};
use crate::error::{denied_message, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

/// Answers DescribeUserScramCredentials from this broker's image.
pub fn describe(shard: &Shard, frame: &RequestFrame) -> HandlerResult {
    let req: DescribeUserScramCredentialsRequest = frame.decode()?;
    let image = shard.metadata();
    let mut resp = DescribeUserScramCredentialsResponse::default();
    // Kafka: DESCRIBE on the cluster; refused, the code at the top and on a
    // result per user asked for.
    if let Err(d) =
        Access::of(shard, frame).check(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME)
    {
        let message = || Some(StrBytes::from_static_str(denied_message(&d)));
        resp.error_code = d.code();
        resp.error_message = message();
        resp.results = req
            .users
            .iter()
            .flatten()
            .map(|u| {
                let mut r = DescribeUserScramCredentialsResult::default();
                r.user = u.name.clone();
                r.error_code = d.code();
                r.error_message = message();
                r
            })
            .collect();
        return Ok(respond(frame, &resp));
    }
    let result = |user: &str| {
        let mut r = DescribeUserScramCredentialsResult::default();
        r.user = StrBytes::from_string(user.to_string());
        match image.scram_credentials.get(user) {
            Some(creds) => {
                r.credential_infos = creds
                    .iter()
                    .map(|(m, c)| {
                        let mut i = CredentialInfo::default();
                        i.mechanism = m.kip554_type();
                        i.iterations = c.iterations;
                        i
                    })
                    .collect();
            }
            None => {
                r.error_code = ScramAlterError::ResourceNotFound.code();
                r.error_message = Some(StrBytes::from_string(format!(
                    "Attempt to describe a user credential that does not exist: {user}"
                )));
            }
        }
        r
    };
    resp.results = match &req.users {
        // Kafka's `ScramImage.describe`: a null or an empty list asks for
        // every user (the Java admin client and librdkafka send it empty).
        None => image.scram_credentials.keys().map(|u| result(u)).collect(),
        Some(users) if users.is_empty() => {
            image.scram_credentials.keys().map(|u| result(u)).collect()
        }
        Some(users) => {
            let names: Vec<&str> = users.iter().map(|u| u.name.as_str()).collect();
            let mut out: Vec<DescribeUserScramCredentialsResult> = Vec::new();
            for (i, n) in names.iter().enumerate() {
                if names[..i].contains(n) {
                    continue;
                }
                if names.iter().filter(|m| *m == n).count() > 1 {
                    let mut r = DescribeUserScramCredentialsResult::default();
                    r.user = StrBytes::from_string(n.to_string());
                    r.error_code = ScramAlterError::DuplicateResource.code();
                    r.error_message = Some(StrBytes::from_static_str(
                        "Cannot describe SCRAM credentials for the same user twice in a single request",
                    ));
                    out.push(r);
                } else {
                    out.push(result(n));
                }
            }
            out
        }
    };
    Ok(respond(frame, &resp))
}

/// Answers AlterUserScramCredentials through the active controller.
pub async fn alter(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: AlterUserScramCredentialsRequest = frame.decode()?;
    let deletions: Vec<ScramDeletion> = req
        .deletions
        .iter()
        .map(|d| ScramDeletion {
            name: d.name.to_string(),
            mechanism: d.mechanism,
        })
        .collect();
    let upsertions: Vec<ScramUpsertion> = req
        .upsertions
        .iter()
        .map(|u| ScramUpsertion {
            name: u.name.to_string(),
            mechanism: u.mechanism,
            iterations: u.iterations,
            salt: u.salt.to_vec(),
            salted_password: u.salted_password.to_vec(),
        })
        .collect();
    let mut users: Vec<String> = Vec::new();
    for n in deletions
        .iter()
        .map(|d| &d.name)
        .chain(upsertions.iter().map(|u| &u.name))
    {
        if !users.contains(n) {
            users.push(n.clone());
        }
    }
    let mut resp = AlterUserScramCredentialsResponse::default();
    // Kafka: ALTER on the cluster; refused, the code for each user named
    // (in name order).
    if let Err(d) =
        Access::of(shard, frame).check(Operation::Alter, ResourceType::Cluster, CLUSTER_NAME)
    {
        users.sort();
        resp.results = users
            .into_iter()
            .map(|user| {
                let mut w = AlterUserScramCredentialsResult::default();
                w.user = StrBytes::from_string(user);
                w.error_code = d.code();
                w
            })
            .collect();
        return Ok(respond(frame, &resp));
    }
    let reply = ask_controller(
        shard,
        ControllerRequest::AlterUserScramCredentials {
            deletions,
            upsertions,
        },
    )
    .await;
    let results = match reply {
        Ok(ControllerReply::AlterUserScramCredentials(r)) => Ok(r),
        Ok(_) => Err(MetadataError::from(ControllerCallError::UnexpectedReply)),
        Err(e) => Err(e),
    };
    resp.results = match results {
        Ok(r) => r
            .into_iter()
            .map(|(user, r)| {
                let mut w = AlterUserScramCredentialsResult::default();
                w.user = StrBytes::from_string(user);
                if let Err(e) = r {
                    w.error_code = e.code();
                    w.error_message = Some(StrBytes::from_string(e.to_string()));
                }
                w
            })
            .collect(),
        Err(e) => users
            .into_iter()
            .map(|user| {
                let mut w = AlterUserScramCredentialsResult::default();
                w.user = StrBytes::from_string(user);
                w.error_code = e.code();
                w.error_message = Some(StrBytes::from_string(e.to_string()));
                w
            })
            .collect(),
    };
    Ok(respond(frame, &resp))
}
