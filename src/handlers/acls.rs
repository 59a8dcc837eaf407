//! CreateAcls (key 30), DescribeAcls (key 29) and DeleteAcls (key 31),
//! v1–3, as Kafka answers them: SECURITY_DISABLED (54) without an
//! authorizer (`authorizer.class.name`); CLUSTER_AUTHORIZATION_FAILED (31)
//! without ALTER (create, delete) or DESCRIBE (describe) on the cluster;
//! INVALID_REQUEST (42) for a binding or filter with an UNKNOWN or ANY
//! where Kafka refuses one. Creations and deletions go through the active
//! controller (`cluster::control::acl`) and are answered once applied
//! here; DescribeAcls reads this broker's image.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{ask_controller, respond, HandlerResult, Outcome};
use crate::acl::model::{
    AclBinding, AclFilter, Operation, PatternFilter, PatternType, Permission, ResourceType,
};
use crate::cluster::control::{ControllerReply, ControllerRequest};
use crate::cluster::error::{ControllerCallError, MetadataError};
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::shard::Shard;

const NO_AUTHORIZER: &str = "No Authorizer is configured on the broker";

/// Why a request naming an UNKNOWN (code 0) resource type, pattern type,
/// operation or permission is not answered: Kafka's request classes refuse
/// to parse it, and the broker closes the connection.
const UNKNOWN_ELEMENTS: &str =
    "ACL request with an UNKNOWN (0) resource type, pattern type, operation or permission";

/// Whether any of these codes is UNKNOWN (0).
fn has_unknown(codes: &[i8]) -> bool {
    codes.contains(&0)
}

/// Whether a creation names ANY (1) as its resource type, operation or
/// permission, or ANY (1) or MATCH (2) as its pattern type: values of a
/// filter, not of an ACL. Kafka cannot build such a binding, and the whole
/// CreateAcls fails with UNKNOWN_SERVER_ERROR for every creation.
fn is_filter_value(c: &kafka_protocol::messages::create_acls_request::AclCreation) -> bool {
    c.resource_type == 1
        || c.operation == 1
        || c.permission_type == 1
        || matches!(c.resource_pattern_type, 1 | 2)
}

/// An ACL of a request, or why it is not valid (INVALID_REQUEST's text).
fn binding(
    resource_type: i8,
    resource_name: &str,
    pattern_type: i8,
    principal: &str,
    host: &str,
    operation: i8,
    permission: i8,
) -> Result<AclBinding, String> {
    let resource_type =
        ResourceType::from_code(resource_type).ok_or_else(|| "Invalid resourceType".to_string())?;
    let pattern_type = match pattern_type {
        3 => PatternType::Literal,
        4 => PatternType::Prefixed,
        _ => return Err("Invalid patternType".into()),
    };
    let operation =
        Operation::from_code(operation).ok_or_else(|| "Invalid operation".to_string())?;
    let permission =
        Permission::from_code(permission).ok_or_else(|| "Invalid permissionType".to_string())?;
    Ok(AclBinding {
        resource_type,
        resource_name: resource_name.to_string(),
        pattern_type,
        principal: principal.to_string(),
        host: host.to_string(),
        operation,
        permission,
    })
}

/// A filter of a request, or why it is not valid: ANY (1) matches anything;
/// UNKNOWN (0) and codes Kafka does not know are refused.
#[allow(clippy::too_many_arguments)]
fn filter(
    resource_type: i8,
    resource_name: Option<&str>,
    pattern_type: i8,
    principal: Option<&str>,
    host: Option<&str>,
    operation: i8,
    permission: i8,
) -> Result<AclFilter, String> {
    let resource_type = match resource_type {
        1 => None,
        c => Some(ResourceType::from_code(c).ok_or_else(|| "Invalid resourceType".to_string())?),
    };
    let pattern = match pattern_type {
        1 => PatternFilter::Any,
        2 => PatternFilter::Match,
        3 => PatternFilter::Exactly(PatternType::Literal),
        4 => PatternFilter::Exactly(PatternType::Prefixed),
        _ => return Err("Invalid patternType".into()),
    };
    let operation = match operation {
        1 => None,
        c => Some(Operation::from_code(c).ok_or_else(|| "Invalid operation".to_string())?),
    };
    let permission = match permission {
        1 => None,
        c => Some(Permission::from_code(c).ok_or_else(|| "Invalid permissionType".to_string())?),
    };
    Ok(AclFilter {
        resource_type,
        resource_name: resource_name.map(str::to_string),
        pattern,
        principal: principal.map(str::to_string),
        host: host.map(str::to_string),
        operation,
        permission,
    })
}

/// The refusal every item of a CreateAcls / DeleteAcls request gets before
/// any item is looked at: SECURITY_DISABLED without an authorizer,
/// CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster (Kafka's
/// `AclApis`).
fn refused_whole(access: &Access) -> Option<(i16, &'static str)> {
    if !access.enabled() {
        return Some((codes::SECURITY_DISABLED, NO_AUTHORIZER));
    }
    if !access.cluster(Operation::Alter) {
        return Some((
            codes::CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.",
        ));
    }
    None
}

/// What one item of a CreateAcls / DeleteAcls request is answered with.
enum ItemAnswer<A> {
    /// Refused before the controller was asked: this code and message
    /// (INVALID_REQUEST for an item that does not parse).
    Refused(i16, StrBytes),
    /// The controller's result for the item (`None`: it gave none).
    Answered(Option<A>),
}

/// One [`ItemAnswer`] per item of `parsed`, in order: INVALID_REQUEST for
/// an item that did not parse, the controller's failure for every valid
/// item when the call failed, else the controller's next result (its
/// results are in the order of the valid items).
fn per_item<P, A: Clone, R>(
    parsed: &[Result<P, String>],
    answered: &Result<Vec<A>, MetadataError>,
    mut shape: impl FnMut(ItemAnswer<A>) -> R,
) -> Vec<R> {
    let mut results = match answered {
        Ok(r) => r.clone().into_iter(),
        Err(_) => Vec::new().into_iter(),
    };
    parsed
        .iter()
        .map(|p| {
            shape(match (p, answered) {
                (Err(why), _) => {
                    ItemAnswer::Refused(codes::INVALID_REQUEST, StrBytes::from_string(why.clone()))
                }
                (Ok(_), Err(e)) => {
                    ItemAnswer::Refused(e.code(), StrBytes::from_string(e.to_string()))
                }
                (Ok(_), Ok(_)) => ItemAnswer::Answered(results.next()),
            })
        })
        .collect()
}

/// Answers CreateAcls.
pub async fn create(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: CreateAclsRequest = frame.decode()?;
    if req.creations.iter().any(|c| {
        has_unknown(&[
            c.resource_type,
            c.resource_pattern_type,
            c.operation,
            c.permission_type,
        ])
    }) {
        return Ok(Outcome::Close(UNKNOWN_ELEMENTS.into()));
    }
    let access = Access::of(shard, frame);
    let mut resp = CreateAclsResponse::default();
    let all = |code: i16, msg: &str| {
        req.creations
            .iter()
            .map(|_| {
                let mut r = AclCreationResult::default();
                r.error_code = code;
                r.error_message = Some(StrBytes::from_string(msg.to_string()));
                r
            })
            .collect::<Vec<_>>()
    };
    if let Some((code, msg)) = refused_whole(&access) {
        resp.results = all(code, msg);
        return Ok(respond(frame, &resp));
    }
    if req.creations.iter().any(is_filter_value) {
        resp.results = all(
            codes::UNKNOWN_SERVER_ERROR,
            "An ACL cannot name ANY or MATCH: those are filter values",
        );
        return Ok(respond(frame, &resp));
    }
    let parsed: Vec<Result<AclBinding, String>> = req
        .creations
        .iter()
        .map(|c| {
            binding(
                c.resource_type,
                c.resource_name.as_str(),
                c.resource_pattern_type,
                c.principal.as_str(),
                c.host.as_str(),
                c.operation,
                c.permission_type,
            )
        })
        .collect();
    let valid: Vec<AclBinding> = parsed.iter().filter_map(|p| p.clone().ok()).collect();
    let answered = match ask_controller(shard, ControllerRequest::CreateAcls { acls: valid }).await
    {
        Ok(ControllerReply::CreateAcls(r)) => Ok(r),
        Ok(_) => Err(MetadataError::from(ControllerCallError::UnexpectedReply)),
        Err(e) => Err(e),
    };
    resp.results = per_item(&parsed, &answered, |a| {
        let mut r = AclCreationResult::default();
        match a {
            ItemAnswer::Refused(code, msg) => {
                r.error_code = code;
                r.error_message = Some(msg);
            }
            ItemAnswer::Answered(Some(Ok(()))) => {}
            ItemAnswer::Answered(Some(Err(e))) => {
                r.error_code = e.code();
                r.error_message = Some(StrBytes::from_string(e.to_string()));
            }
            ItemAnswer::Answered(None) => {
                r.error_code = crate::shard::error::AnswerError::Lost.code()
            }
        }
        r
    });
    Ok(respond(frame, &resp))
}

/// Answers DescribeAcls from this broker's image.
pub fn describe(shard: &Shard, frame: &RequestFrame) -> HandlerResult {
    let req: DescribeAclsRequest = frame.decode()?;
    if has_unknown(&[
        req.resource_type_filter,
        req.pattern_type_filter,
        req.operation,
        req.permission_type,
    ]) {
        return Ok(Outcome::Close(UNKNOWN_ELEMENTS.into()));
    }
    let access = Access::of(shard, frame);
    let mut resp = DescribeAclsResponse::default();
    if !access.enabled() {
        resp.error_code = codes::SECURITY_DISABLED;
        resp.error_message = Some(StrBytes::from_static_str(NO_AUTHORIZER));
        return Ok(respond(frame, &resp));
    }
    if !access.cluster(Operation::Describe) {
        resp.error_code = codes::CLUSTER_AUTHORIZATION_FAILED;
        resp.error_message = Some(StrBytes::from_static_str("Cluster authorization failed."));
        return Ok(respond(frame, &resp));
    }
    let f = match filter(
        req.resource_type_filter,
        req.resource_name_filter.as_ref().map(|s| s.as_str()),
        req.pattern_type_filter,
        req.principal_filter.as_ref().map(|s| s.as_str()),
        req.host_filter.as_ref().map(|s| s.as_str()),
        req.operation,
        req.permission_type,
    ) {
        Ok(f) => f,
        Err(why) => {
            resp.error_code = codes::INVALID_REQUEST;
            resp.error_message = Some(StrBytes::from_string(why));
            return Ok(respond(frame, &resp));
        }
    };
    let image = shard.metadata();
    let mut grouped: BTreeMap<(i8, String, i8), Vec<&AclBinding>> = BTreeMap::new();
    for a in image.acls.values().filter(|a| f.matches(a)) {
        grouped
            .entry((
                a.resource_type.code(),
                a.resource_name.clone(),
                a.pattern_type.code(),
            ))
            .or_default()
            .push(a);
    }
    resp.resources = grouped
        .into_iter()
        .map(|((rt, name, pt), acls)| {
            let mut r = DescribeAclsResource::default();
            r.resource_type = rt;
            r.resource_name = StrBytes::from_string(name);
            r.pattern_type = pt;
            r.acls = acls
                .into_iter()
                .map(|a| {
                    let mut d = AclDescription::default();
                    d.principal = StrBytes::from_string(a.principal.clone());
                    d.host = StrBytes::from_string(a.host.clone());
                    d.operation = a.operation.code();
                    d.permission_type = a.permission.code();
                    d
                })
                .collect();
            r
        })
        .collect();
    Ok(respond(frame, &resp))
}

/// Answers DeleteAcls.
pub async fn delete(shard: &Rc<Shard>, frame: &RequestFrame) -> HandlerResult {
    let req: DeleteAclsRequest = frame.decode()?;
    if req.filters.iter().any(|f| {
        has_unknown(&[
            f.resource_type_filter,
            f.pattern_type_filter,
            f.operation,
            f.permission_type,
        ])
    }) {
        return Ok(Outcome::Close(UNKNOWN_ELEMENTS.into()));
    }
    let access = Access::of(shard, frame);
    let mut resp = DeleteAclsResponse::default();
    if let Some((code, msg)) = refused_whole(&access) {
        resp.filter_results = req
            .filters
            .iter()
            .map(|_| {
                let mut r = DeleteAclsFilterResult::default();
                r.error_code = code;
                r.error_message = Some(StrBytes::from_string(msg.to_string()));
                r
            })
            .collect();
        return Ok(respond(frame, &resp));
    }
    let parsed: Vec<Result<AclFilter, String>> = req
        .filters
        .iter()
        .map(|f| {
            filter(
                f.resource_type_filter,
                f.resource_name_filter.as_ref().map(|s| s.as_str()),
                f.pattern_type_filter,
                f.principal_filter.as_ref().map(|s| s.as_str()),
                f.host_filter.as_ref().map(|s| s.as_str()),
                f.operation,
                f.permission_type,
            )
        })
        .collect();
    let valid: Vec<AclFilter> = parsed.iter().filter_map(|p| p.clone().ok()).collect();
    let answered =
        match ask_controller(shard, ControllerRequest::DeleteAcls { filters: valid }).await {
            Ok(ControllerReply::DeleteAcls(r)) => Ok(r),
            Ok(_) => Err(MetadataError::from(ControllerCallError::UnexpectedReply)),
            Err(e) => Err(e),
        };
    resp.filter_results = per_item(&parsed, &answered, |a| {
        let mut r = DeleteAclsFilterResult::default();
        match a {
            ItemAnswer::Refused(code, msg) => {
                r.error_code = code;
                r.error_message = Some(msg);
            }
            ItemAnswer::Answered(None) => {
                r.error_code = crate::shard::error::AnswerError::Lost.code()
            }
            ItemAnswer::Answered(Some(matched)) => {
                r.matching_acls = matched
                    .into_iter()
                    .map(|a| {
                        let mut m = DeleteAclsMatchingAcl::default();
                        m.resource_type = a.resource_type.code();
                        m.resource_name = StrBytes::from_string(a.resource_name);
                        m.pattern_type = a.pattern_type.code();
                        m.principal = StrBytes::from_string(a.principal);
                        m.host = StrBytes::from_string(a.host);
                        m.operation = a.operation.code();
                        m.permission_type = a.permission.code();
                        m
                    })
                    .collect();
            }
        }
        r
    });
    Ok(respond(frame, &resp))
}
