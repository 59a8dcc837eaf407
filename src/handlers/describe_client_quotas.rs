//! DescribeClientQuotas (key 48, v0–1, KIP-546), answered from this
//! broker's image as Kafka's `ClientQuotasImage.describe` answers: filter
//! components match an entity type EXACT (a name), DEFAULT (the type's
//! default) or SPECIFIED/ANY (any name, the default included); `strict`
//! keeps only entities naming exactly the filtered types. A bad filter is
//! answered at the top (INVALID_REQUEST, or UNSUPPORTED_VERSION for an
//! unknown entity type) with no entries; without DESCRIBE_CONFIGS on the
//! cluster, CLUSTER_AUTHORIZATION_FAILED the same way.

use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};
use kafka_protocol::protocol::StrBytes;

use super::authz::Access;
use super::{respond, HandlerResult};
use crate::acl::model::Operation;
use crate::cluster::control::quota::QuotaError;
use crate::error::{codes, KafkaCode};
use crate::protocol::RequestFrame;
use crate::quota::model::{EntityName, QuotaEntity, QuotaTable, CLIENT_ID, IP, USER};
use crate::shard::Shard;

/// A checked filter: the types matched by name (or default), and those
/// matched by any name.
#[derive(Debug, Default, PartialEq)]
pub struct Filter {
    exact: Vec<(String, EntityName)>,
    any: Vec<String>,
    strict: bool,
}

const EXACT: i8 = 0;
const DEFAULT: i8 = 1;
const SPECIFIED: i8 = 2;

/// Checks a request's components as Kafka does.
pub fn filter(
    components: &[(String, i8, Option<String>)],
    strict: bool,
) -> Result<Filter, QuotaError> {
    let bad = |s: String| Err(QuotaError::InvalidRequest(s));
    let mut f = Filter {
        strict,
        ..Filter::default()
    };
    for (t, match_type, name) in components {
        if t.is_empty() {
            return bad("Invalid empty entity type.".into());
        }
        if f.exact.iter().any(|(e, _)| e == t) || f.any.contains(t) {
            return bad(format!(
                "Entity type {t} cannot appear more than once in the filter."
            ));
        }
        if ![IP, USER, CLIENT_ID].contains(&t.as_str()) {
            return Err(QuotaError::UnsupportedEntityType(t.clone()));
        }
        match *match_type {
            EXACT => match name {
                None => {
                    return bad(
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.".into(),
                    )
                }
                Some(n) => f.exact.push((t.clone(), Some(n.clone()))),
            },
            DEFAULT => {
                if name.is_some() {
                    return bad(
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                            .into(),
                    );
                }
                f.exact.push((t.clone(), None));
            }
            SPECIFIED => {
                if name.is_some() {
                    return bad(
                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                            .into(),
                    );
                }
                f.any.push(t.clone());
            }
            other => return bad(format!("Unknown match type {other}")),
        }
    }
    let has = |t: &str| f.exact.iter().any(|(e, _)| e == t) || f.any.iter().any(|e| e == t);
    if has(IP) && (has(USER) || has(CLIENT_ID)) {
        return bad("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.".into());
    }
    Ok(f)
}

impl Filter {
    /// Whether `entity` passes.
    pub fn matches(&self, entity: &QuotaEntity) -> bool {
        if self.strict && entity.len() != self.exact.len() + self.any.len() {
            return false;
        }
        self.exact
            .iter()
            .all(|(t, n)| entity.get(t).is_some_and(|have| have == n))
            && self.any.iter().all(|t| entity.get(t).is_some())
    }

    /// The entities of `table` that pass, with their values.
    pub fn select<'a>(
        &'a self,
        table: &'a QuotaTable,
    ) -> impl Iterator<
        Item = (
            &'a QuotaEntity,
            &'a std::collections::BTreeMap<String, crate::quota::model::QuotaValue>,
        ),
    > + 'a {
        table.iter().filter(|(e, _)| self.matches(e))
    }
}

/// Answers DescribeClientQuotas.
pub fn handle(shard: &Shard, frame: &RequestFrame) -> HandlerResult {
    let req: DescribeClientQuotasRequest = frame.decode()?;
    let mut resp = DescribeClientQuotasResponse::default();
    if !Access::of(shard, frame).cluster(Operation::DescribeConfigs) {
        resp.error_code = codes::CLUSTER_AUTHORIZATION_FAILED;
        resp.error_message = Some(StrBytes::from_static_str("Cluster authorization failed."));
        resp.entries = None;
        return Ok(respond(frame, &resp));
    }
    let components: Vec<(String, i8, Option<String>)> = req
        .components
        .iter()
        .map(|c| {
            (
                c.entity_type.to_string(),
                c.match_type,
                c._match.as_ref().map(|m| m.to_string()),
            )
        })
        .collect();
    let f = match filter(&components, req.strict) {
        Ok(f) => f,
        Err(e) => {
            resp.error_code = e.code();
            resp.error_message = Some(StrBytes::from_string(e.to_string()));
            resp.entries = None;
            return Ok(respond(frame, &resp));
        }
    };
    let image = shard.metadata();
    resp.entries = Some(
        f.select(&image.client_quotas)
            .map(|(entity, values)| {
                let mut entry = EntryData::default();
                entry.entity = entity
                    .parts()
                    .into_iter()
                    .map(|(t, n)| {
                        let mut d = EntityData::default();
                        d.entity_type = StrBytes::from_static_str(t);
                        d.entity_name = n.map(StrBytes::from_string);
                        d
                    })
                    .collect();
                entry.values = values
                    .iter()
                    .map(|(k, v)| {
                        let mut d = ValueData::default();
                        d.key = StrBytes::from_string(k.clone());
                        d.value = v.0;
                        d
                    })
                    .collect();
                entry
            })
            .collect(),
    );
    Ok(respond(frame, &resp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::model::QuotaValue;

    fn c(t: &str, m: i8, n: Option<&str>) -> (String, i8, Option<String>) {
        (t.into(), m, n.map(str::to_string))
    }

    fn table() -> QuotaTable {
        let mut t = QuotaTable::new();
        let s = |x: &str| Some(Some(x.to_string()));
        for (u, cl) in [
            (s("alice"), None),
            (Some(None), None),
            (s("alice"), s("app")),
            (None, s("app")),
            (None, Some(None)),
        ] {
            t.entry(QuotaEntity {
                user: u,
                client_id: cl,
                ip: None,
            })
            .or_default()
            .insert("producer_byte_rate".into(), QuotaValue(1.0));
        }
        t.entry(QuotaEntity {
            ip: Some(None),
            ..QuotaEntity::default()
        })
        .or_default()
        .insert("connection_creation_rate".into(), QuotaValue(5.0));
        t
    }

    fn count(components: &[(String, i8, Option<String>)], strict: bool) -> usize {
        let t = table();
        filter(components, strict).unwrap().select(&t).count()
    }

    #[test]
    fn match_types_and_strict() {
        assert_eq!(count(&[], false), 6);
        assert_eq!(count(&[], true), 0);
        assert_eq!(count(&[c("user", EXACT, Some("alice"))], false), 2);
        assert_eq!(count(&[c("user", EXACT, Some("alice"))], true), 1);
        assert_eq!(count(&[c("user", DEFAULT, None)], false), 1);
        assert_eq!(count(&[c("user", SPECIFIED, None)], false), 3);
        assert_eq!(count(&[c("user", SPECIFIED, None)], true), 2);
        assert_eq!(
            count(
                &[
                    c("user", SPECIFIED, None),
                    c("client-id", EXACT, Some("app"))
                ],
                true
            ),
            1
        );
        assert_eq!(count(&[c("client-id", SPECIFIED, None)], true), 2);
        assert_eq!(count(&[c("ip", DEFAULT, None)], false), 1);
    }

    #[test]
    fn kafkas_refusals() {
        let text = |cs: &[(String, i8, Option<String>)]| filter(cs, false).unwrap_err().to_string();
        assert_eq!(
            text(&[c("", EXACT, Some("a"))]),
            "Invalid empty entity type."
        );
        assert_eq!(
            text(&[c("user", EXACT, Some("a")), c("user", DEFAULT, None)]),
            "Entity type user cannot appear more than once in the filter."
        );
        assert_eq!(
            filter(&[c("group", EXACT, Some("a"))], false),
            Err(QuotaError::UnsupportedEntityType("group".into()))
        );
        assert_eq!(
            text(&[c("user", EXACT, None)]),
            "Request specified MATCH_TYPE_EXACT, but set match string to null."
        );
        assert_eq!(
            text(&[c("user", DEFAULT, Some("a"))]),
            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
        );
        assert_eq!(
            text(&[c("user", SPECIFIED, Some("a"))]),
            "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
        );
        assert_eq!(text(&[c("user", 7, None)]), "Unknown match type 7");
        assert!(
            text(&[c("ip", SPECIFIED, None), c("user", SPECIFIED, None)])
                .starts_with("Invalid entity filter component combination.")
        );
    }
}
