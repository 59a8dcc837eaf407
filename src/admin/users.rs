//! `fjord users describe | upsert | delete`: SCRAM credentials (KIP-554,
//! DescribeUserScramCredentials / AlterUserScramCredentials), what
//! `kafka-configs.sh --entity-type users --add-config SCRAM-SHA-256=[…]`
//! does. The password is salted and hashed here; only the salted password
//! goes over the wire, as Kafka's admin client sends it.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use serde_json::{json, Value};

use super::client::{ClientError, Connection};
use super::output::{table, Report};
use crate::security::scram::ScramMechanism;

/// Kafka's fewest SCRAM iterations (`ScramMechanism.minIterations`).
pub const MIN_ITERATIONS: i32 = 4096;

/// One user's credentials: (mechanism name, iterations).
pub type UserCredentials = (String, Vec<(String, i32)>);

fn mechanism_name(t: i8) -> String {
    ScramMechanism::from_kip554_type(t)
        .map(|m| m.name().to_string())
        .unwrap_or_else(|| format!("UNKNOWN({t})"))
}

/// Takes user names (empty: every user); gives each user's mechanisms and
/// iterations. A named user without credentials is RESOURCE_NOT_FOUND.
pub fn describe(c: &mut Connection, users: &[String]) -> Result<Vec<UserCredentials>, ClientError> {
    let v = c.version(ApiKey::DescribeUserScramCredentials, 0)?;
    let mut req = DescribeUserScramCredentialsRequest::default();
    req.users = if users.is_empty() {
        None
    } else {
        Some(
            users
                .iter()
                .map(|u| {
                    let mut n = describe_user_scram_credentials_request::UserName::default();
                    n.name = StrBytes::from_string(u.clone());
                    n
                })
                .collect(),
        )
    };
    let resp: DescribeUserScramCredentialsResponse =
        c.send(ApiKey::DescribeUserScramCredentials, v, &req)?;
    ClientError::check(
        "describe SCRAM credentials",
        resp.error_code,
        resp.error_message.as_ref(),
    )?;
    let mut out = Vec::new();
    for r in resp.results {
        ClientError::check(
            format!("user {}", r.user),
            r.error_code,
            r.error_message.as_ref(),
        )?;
        out.push((
            r.user.to_string(),
            r.credential_infos
                .iter()
                .map(|i| (mechanism_name(i.mechanism), i.iterations))
                .collect(),
        ));
    }
    out.sort();
    Ok(out)
}

/// Takes a user, a mechanism name (SCRAM-SHA-256 or SCRAM-SHA-512),
/// iterations and the password; salts it (32 random bytes) and upserts the
/// credential.
pub fn upsert(
    c: &mut Connection,
    user: &str,
    mechanism: &str,
    iterations: i32,
    password: &str,
) -> Result<(), ClientError> {
    let m = ScramMechanism::from_name(mechanism)
        .ok_or_else(|| ClientError::Invalid(format!("unknown SCRAM mechanism {mechanism:?}")))?;
    let iters = u32::try_from(iterations)
        .map_err(|_| ClientError::Invalid(format!("iterations {iterations}: not a valid count")))?;
    let mut salt = uuid::Uuid::new_v4().as_bytes().to_vec();
    salt.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    let salted = m.salted_password(password.as_bytes(), &salt, iters);
    let v = c.version(ApiKey::AlterUserScramCredentials, 0)?;
    let mut u = alter_user_scram_credentials_request::ScramCredentialUpsertion::default();
    u.name = StrBytes::from_string(user.to_string());
    u.mechanism = m.kip554_type();
    u.iterations = iterations;
    u.salt = salt.into();
    u.salted_password = salted.into();
    let mut req = AlterUserScramCredentialsRequest::default();
    req.upsertions = vec![u];
    alter(c, v, &req, user)
}

/// Takes a user and a mechanism name; deletes that credential.
pub fn delete(c: &mut Connection, user: &str, mechanism: &str) -> Result<(), ClientError> {
    let m = ScramMechanism::from_name(mechanism)
        .ok_or_else(|| ClientError::Invalid(format!("unknown SCRAM mechanism {mechanism:?}")))?;
    let v = c.version(ApiKey::AlterUserScramCredentials, 0)?;
    let mut d = alter_user_scram_credentials_request::ScramCredentialDeletion::default();
    d.name = StrBytes::from_string(user.to_string());
    d.mechanism = m.kip554_type();
    let mut req = AlterUserScramCredentialsRequest::default();
    req.deletions = vec![d];
    alter(c, v, &req, user)
}

fn alter(
    c: &mut Connection,
    v: i16,
    req: &AlterUserScramCredentialsRequest,
    user: &str,
) -> Result<(), ClientError> {
    let resp: AlterUserScramCredentialsResponse =
        c.send(ApiKey::AlterUserScramCredentials, v, req)?;
    for r in &resp.results {
        ClientError::check(
            format!("user {user}"),
            r.error_code,
            r.error_message.as_ref(),
        )?;
    }
    Ok(())
}

/// Takes described users; gives a table and JSON (`users`: a list of
/// {user, credentials: [{mechanism, iterations}]}).
pub fn report(users: &[UserCredentials]) -> Report {
    let mut rows = Vec::new();
    let mut docs = Vec::new();
    for (u, creds) in users {
        for (m, i) in creds {
            rows.push(vec![u.clone(), m.clone(), i.to_string()]);
        }
        docs.push(json!({
            "user": u,
            "credentials": creds.iter().map(|(m, i)| json!({"mechanism": m, "iterations": i})).collect::<Vec<Value>>(),
        }));
    }
    Report::new(
        json!({ "users": docs }),
        table(&["USER", "MECHANISM", "ITERATIONS"], &rows),
    )
}
