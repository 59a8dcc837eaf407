//! SaslHandshake (key 17, v0–1) and SaslAuthenticate (key 36, v0–2): the
//! connection hands them here with its session (`security::session`),
//! which decides; this file decodes and encodes.
//!
//! * SaslHandshake: the listener's mechanisms in the answer; an unknown
//!   one is UNSUPPORTED_SASL_MECHANISM (33) and the connection closes
//!   after the answer; on a listener without SASL, or while an exchange
//!   runs, ILLEGAL_SASL_STATE (34). v0 means raw length-prefixed tokens
//!   follow instead of SaslAuthenticate requests.
//! * SaslAuthenticate: one token each way; a failure is
//!   SASL_AUTHENTICATION_FAILED (58) with the same text for every
//!   credential problem, then the connection is closed after
//!   `connection.failed.authentication.delay.ms`. v1+ carries
//!   `session_lifetime_ms` (KIP-368).

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::{respond, HandlerResult, Outcome};
use crate::error::codes;
use crate::protocol::{RequestFrame, Response, ResponseChunk};
use crate::security::sasl::CredentialSource;
use crate::security::session::{Authenticated, HandshakeError, Session};
use crate::shard::{now_ms, Shard};

/// What the connection does after a SASL frame.
#[derive(Debug)]
pub struct SaslAnswer {
    /// Write this (a response, or a raw token after SaslHandshake v0).
    pub outcome: Outcome,
    /// Close the connection after this delay (authentication failed, or an
    /// unsupported mechanism), with the reason for the log.
    pub close_after: Option<(Duration, String)>,
}

/// A fresh SCRAM nonce (printable, no comma).
fn nonce() -> String {
    let a = uuid::Uuid::new_v4().simple().to_string();
    let b = uuid::Uuid::new_v4().simple().to_string();
    format!("{a}{b}")
}

/// Answers a SaslHandshake or SaslAuthenticate of the connection whose
/// session is `session`. Errors (the connection closes) on an undecodable
/// body.
pub fn handle(
    shard: &Shard,
    session: &mut Session,
    frame: &RequestFrame,
) -> Result<SaslAnswer, crate::protocol::ProtocolError> {
    let delay = session.listener.failed_auth_delay;
    match frame.api_key {
        kafka_protocol::messages::ApiKey::SaslHandshake => {
            let req: SaslHandshakeRequest = frame.decode()?;
            let mut resp = SaslHandshakeResponse::default();
            resp.mechanisms = session
                .mechanisms()
                .into_iter()
                .map(StrBytes::from_static_str)
                .collect();
            let close_after =
                match session.handshake(req.mechanism.as_str(), frame.prefix.api_version) {
                    Ok(()) => None,
                    Err(e @ HandshakeError::Unsupported(_)) => {
                        resp.error_code = codes::UNSUPPORTED_SASL_MECHANISM;
                        Some((Duration::ZERO, e.to_string()))
                    }
                    Err(HandshakeError::IllegalState(_)) => {
                        resp.error_code = codes::ILLEGAL_SASL_STATE;
                        None
                    }
                };
            Ok(SaslAnswer {
                outcome: respond(frame, &resp),
                close_after,
            })
        }
        _ => {
            let req: SaslAuthenticateRequest = frame.decode()?;
            let version = frame.prefix.api_version;
            let image = shard.metadata();
            let step = session.authenticate(
                &req.auth_bytes,
                version,
                &*image as &dyn CredentialSource,
                Instant::now(),
                now_ms(),
                &nonce(),
            );
            let mut resp = SaslAuthenticateResponse::default();
            let close_after = match step {
                Authenticated::Continue(token) => {
                    resp.auth_bytes = Bytes::from(token);
                    None
                }
                Authenticated::Done {
                    token,
                    session_lifetime_ms,
                } => {
                    resp.auth_bytes = Bytes::from(token);
                    resp.session_lifetime_ms = session_lifetime_ms;
                    log::debug!(
                        "{} authenticated on listener {} from {}",
                        session.principal,
                        session.listener.name,
                        session.peer
                    );
                    None
                }
                Authenticated::Failed { message, detail } => {
                    resp.error_code = codes::SASL_AUTHENTICATION_FAILED;
                    resp.error_message = Some(StrBytes::from_string(message));
                    Some((
                        delay,
                        format!(
                            "authentication failed on listener {}: {detail}",
                            session.listener.name
                        ),
                    ))
                }
            };
            Ok(SaslAnswer {
                outcome: respond(frame, &resp),
                close_after,
            })
        }
    }
}

/// A raw SASL token after SaslHandshake v0 (the frame's whole body); the
/// answer is the next raw token, length-prefixed. A failure closes the
/// connection after the delay without an answer (as Kafka's v0 does).
pub fn raw_token(shard: &Shard, session: &mut Session, token: &[u8]) -> SaslAnswer {
    let image = shard.metadata();
    let step = session.authenticate(
        token,
        -1,
        &*image as &dyn CredentialSource,
        Instant::now(),
        now_ms(),
        &nonce(),
    );
    let raw = |t: Vec<u8>| {
        let mut b = BytesMut::with_capacity(4 + t.len());
        b.put_u32(t.len() as u32);
        b.extend_from_slice(&t);
        Outcome::Respond(Response {
            chunks: vec![ResponseChunk::Bytes(b.freeze())],
        })
    };
    match step {
        Authenticated::Continue(t) | Authenticated::Done { token: t, .. } => SaslAnswer {
            outcome: raw(t),
            close_after: None,
        },
        Authenticated::Failed { detail, .. } => SaslAnswer {
            outcome: Outcome::NoResponse,
            close_after: Some((
                session.listener.failed_auth_delay,
                format!(
                    "authentication failed on listener {}: {detail}",
                    session.listener.name
                ),
            )),
        },
    }
}

/// SaslHandshake or SaslAuthenticate reaching dispatch without a session
/// (not through a client connection): ILLEGAL_SASL_STATE (34).
pub fn without_session(frame: &RequestFrame) -> HandlerResult {
    if frame.api_key == kafka_protocol::messages::ApiKey::SaslHandshake {
        let mut resp = SaslHandshakeResponse::default();
        resp.error_code = codes::ILLEGAL_SASL_STATE;
        return Ok(respond(frame, &resp));
    }
    let mut resp = SaslAuthenticateResponse::default();
    resp.error_code = codes::ILLEGAL_SASL_STATE;
    Ok(respond(frame, &resp))
}
