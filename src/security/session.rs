//! One connection's authentication, as Kafka's `SaslServerAuthenticator`
//! and `SocketServer` run it: which requests a connection may send before
//! it has authenticated, the SASL exchange (SaslHandshake v0 with raw
//! tokens, or v1 with SaslAuthenticate v0–2), the principal it ends with,
//! and KIP-368's re-authentication and session expiry. No I/O: the
//! connection (`net::connection`) asks [`Session::gate`] before each
//! frame and acts on the answer.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;

use super::principal::KafkaPrincipal;
use super::sasl::{
    session_lifetime_ms, CredentialSource, Mechanism, SaslExchange, SaslFailure, Step,
};
use super::ListenerSecurity;
use crate::config::SecurityProtocol;

#[derive(Debug)]
enum State {
    /// Authenticated, or a listener without SASL.
    Ready,
    /// A SASL listener before (or between) exchanges: ApiVersions and
    /// SaslHandshake only.
    Handshake,
    /// After SaslHandshake v1: SaslAuthenticate frames.
    Authenticate(Box<SaslExchange>),
    /// After SaslHandshake v0: the next frames are raw SASL tokens.
    RawTokens(Box<SaslExchange>),
}

/// What the connection does with its next frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Dispatch it as usual.
    Serve,
    /// A SaslHandshake or SaslAuthenticate: answered by the session's
    /// handlers (`handlers::sasl_*`).
    Sasl,
    /// The frame is a raw SASL token (after SaslHandshake v0), not a
    /// request.
    RawToken,
    /// Close the connection (logged with this reason): a request before
    /// authentication, or after the session expired.
    Close(String),
}

/// What an authentication step gives the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authenticated {
    /// Send this token and wait for the next.
    Continue(Vec<u8>),
    /// Done: send this token; `session_lifetime_ms` for SaslAuthenticate
    /// v1+ (0: no expiry).
    Done {
        /// The last server token.
        token: Vec<u8>,
        /// KIP-368's lifetime (ms).
        session_lifetime_ms: i64,
    },
    /// Failed: answer SASL_AUTHENTICATION_FAILED (58) with `message`, then
    /// close after the listener's failed-authentication delay.
    Failed {
        /// The text for the client (the same for every credential error).
        message: String,
        /// The detail for the log.
        detail: String,
    },
}

/// Why a SaslHandshake is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// UNSUPPORTED_SASL_MECHANISM (33): not one of the listener's (the
    /// answer lists them); the connection closes after the answer.
    #[error("unsupported SASL mechanism {0}")]
    Unsupported(String),
    /// ILLEGAL_SASL_STATE (34): not a SASL listener, an exchange already
    /// running, or a re-authentication from a client that cannot (it never
    /// sent SaslAuthenticate v1+), or with another mechanism.
    #[error("{0}")]
    IllegalState(&'static str),
}

/// One connection's authentication.
#[derive(Debug)]
pub struct Session {
    /// The listener the connection arrived on.
    pub listener: Arc<ListenerSecurity>,
    /// Who it is (`User:ANONYMOUS` until it authenticates).
    pub principal: KafkaPrincipal,
    /// The client's address.
    pub peer: SocketAddr,
    state: State,
    /// The mechanism of the first exchange (re-authentication keeps it).
    mechanism: Option<Mechanism>,
    /// Whether the client used SaslAuthenticate v1+ (only those clients
    /// re-authenticate, KIP-368).
    reauth_capable: bool,
    /// When the session expires (KIP-368); None: never.
    expires: Option<Instant>,
    /// Whether this connection authenticated once (a later exchange is a
    /// re-authentication).
    authenticated_once: bool,
}

impl Session {
    /// A new connection on `listener` from `peer`.
    pub fn new(listener: Arc<ListenerSecurity>, peer: SocketAddr) -> Session {
        let state = if listener.sasl.is_some() {
            State::Handshake
        } else {
            State::Ready
        };
        Session {
            listener,
            principal: KafkaPrincipal::anonymous(),
            peer,
            state,
            mechanism: None,
            reauth_capable: false,
            expires: None,
            authenticated_once: false,
        }
    }

    /// Whether the connection has authenticated (always, on a listener
    /// without SASL).
    pub fn authenticated(&self) -> bool {
        matches!(self.state, State::Ready) || self.authenticated_once
    }

    /// The largest frame this connection may send now: before a SASL
    /// connection first authenticates, `sasl.server.max.receive.size`;
    /// then `socket_max` (`socket.request.max.bytes`).
    pub fn max_frame(&self, socket_max: usize) -> usize {
        if self.authenticated_once || self.listener.sasl.is_none() {
            socket_max
        } else {
            self.listener.max_receive_size.min(socket_max)
        }
    }

    /// Sets the principal of a TLS client certificate (SSL listeners; the
    /// certificate's subject in RFC 2253 form, mapped by the listener's
    /// rules). A SASL_SSL connection's principal is its SASL user instead.
    pub fn set_certificate_subject(&mut self, dn: &str) {
        if self.listener.protocol == SecurityProtocol::Ssl {
            self.principal = KafkaPrincipal::user(self.listener.principal_rules.map(dn));
        }
    }

    /// What to do with the next frame, of API `api_key` (None: a key this
    /// broker does not know), at `now`.
    pub fn gate(&self, api_key: Option<ApiKey>, now: Instant) -> Gate {
        let name = |k: Option<ApiKey>| match k {
            Some(k) => format!("{k:?}"),
            None => "unknown".to_string(),
        };
        match &self.state {
            State::RawTokens(_) => Gate::RawToken,
            State::Ready => match api_key {
                Some(ApiKey::SaslHandshake) | Some(ApiKey::SaslAuthenticate) => Gate::Sasl,
                _ if self.expires.is_some_and(|e| now >= e) => Gate::Close(format!(
                    "the session of {} expired (connections.max.reauth.ms or the credential's lifetime); it did not re-authenticate before its {} request",
                    self.principal,
                    name(api_key)
                )),
                _ => Gate::Serve,
            },
            State::Handshake => match api_key {
                Some(ApiKey::ApiVersions) => Gate::Serve,
                Some(ApiKey::SaslHandshake) => Gate::Sasl,
                // Between the expiry and the re-authentication, nothing
                // else is served.
                k => Gate::Close(format!(
                    "unexpected Kafka request of type {} during SASL handshake",
                    name(k)
                )),
            },
            State::Authenticate(_) => match api_key {
                Some(ApiKey::SaslAuthenticate) => Gate::Sasl,
                k => Gate::Close(format!(
                    "unexpected Kafka request of type {} during SASL authentication",
                    name(k)
                )),
            },
        }
    }

    /// SaslHandshake (`version` 0 or 1) for `mechanism`. Errors with why
    /// it is refused.
    pub fn handshake(&mut self, mechanism: &str, version: i16) -> Result<(), HandshakeError> {
        let Some(sasl) = &self.listener.sasl else {
            return Err(HandshakeError::IllegalState(
                "SaslHandshake on a listener without SASL",
            ));
        };
        let m = Mechanism::from_name(mechanism)
            .filter(|m| sasl.mechanisms.contains(m))
            .ok_or_else(|| HandshakeError::Unsupported(mechanism.to_string()))?;
        match self.state {
            State::Handshake => {}
            State::Ready if self.authenticated_once => {
                if !self.reauth_capable {
                    return Err(HandshakeError::IllegalState(
                        "re-authentication from a client that did not use SaslAuthenticate v1",
                    ));
                }
                if self.mechanism != Some(m) {
                    return Err(HandshakeError::IllegalState(
                        "re-authentication must keep the mechanism",
                    ));
                }
            }
            _ => {
                return Err(HandshakeError::IllegalState(
                    "SaslHandshake while an exchange is running",
                ))
            }
        }
        let exchange = Box::new(SaslExchange::new(m));
        self.state = if version == 0 && !self.authenticated_once {
            State::RawTokens(exchange)
        } else {
            State::Authenticate(exchange)
        };
        Ok(())
    }

    /// The mechanisms the listener offers, for SaslHandshake's answer.
    pub fn mechanisms(&self) -> Vec<&'static str> {
        self.listener
            .sasl
            .as_ref()
            .map(|s| s.mechanisms.iter().map(|m| m.name()).collect())
            .unwrap_or_default()
    }

    /// One token of the running exchange (a SaslAuthenticate of `version`,
    /// or a raw token after SaslHandshake v0 with `version` -1), at `now`
    /// (and `now_ms`, ms since the epoch, for token expiry). `nonce` is
    /// fresh random printable text. Gives what to answer; an exchange that
    /// completes sets the principal and the session's expiry (a
    /// re-authentication must keep the principal).
    pub fn authenticate(
        &mut self,
        token: &[u8],
        version: i16,
        credentials: &dyn CredentialSource,
        now: Instant,
        now_ms: i64,
        nonce: &str,
    ) -> Authenticated {
        let (State::Authenticate(exchange) | State::RawTokens(exchange)) = &mut self.state else {
            return Authenticated::Failed {
                message: "SaslAuthenticate before SaslHandshake".to_string(),
                detail: "no exchange is running".to_string(),
            };
        };
        let Some(sasl) = self.listener.sasl.clone() else {
            return Authenticated::Failed {
                message: "not a SASL listener".to_string(),
                detail: "not a SASL listener".to_string(),
            };
        };
        let mechanism = exchange.mechanism();
        if version >= 1 {
            self.reauth_capable = true;
        }
        let fail = |f: SaslFailure| Authenticated::Failed {
            message: f.message_for(mechanism),
            detail: f.to_string(),
        };
        match exchange.step(token, &sasl, credentials, now_ms, nonce) {
            Err(f) => {
                self.state = State::Handshake;
                fail(f)
            }
            Ok(Step::Continue(t)) => Authenticated::Continue(t),
            Ok(Step::Challenge(t, _)) => Authenticated::Continue(t),
            Ok(Step::Done {
                response,
                principal,
                expires_at_ms,
            }) => {
                if self.authenticated_once && principal != self.principal {
                    self.state = State::Handshake;
                    return Authenticated::Failed {
                        message: SaslFailure::client_message(mechanism),
                        detail: format!(
                            "re-authentication as {principal} on a connection of {}",
                            self.principal
                        ),
                    };
                }
                let lifetime = session_lifetime_ms(sasl.max_reauth_ms, expires_at_ms, now_ms);
                // A credential already past its expiry (an OAUTHBEARER token
                // within the validator's clock skew) leaves no time: Kafka
                // announces 0 and closes the connection at its next request.
                let spent = expires_at_ms.is_some_and(|e| e <= now_ms);
                // Expiry counts only for clients that can re-authenticate;
                // Kafka enforces it on every client, which then reconnect.
                self.expires = if spent {
                    Some(now)
                } else {
                    (lifetime > 0).then(|| now + Duration::from_millis(lifetime as u64))
                };
                self.principal = principal;
                self.mechanism = Some(mechanism);
                self.authenticated_once = true;
                self.state = State::Ready;
                Authenticated::Done {
                    token: response,
                    session_lifetime_ms: if version >= 1 && !spent { lifetime } else { 0 },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::principal::PrincipalRules;
    use crate::security::sasl::SaslServerConfig;
    use crate::security::scram::{ScramCredential, ScramMechanism};

    struct NoCreds;
    impl CredentialSource for NoCreds {
        fn scram(&self, _: &str, _: ScramMechanism) -> Option<ScramCredential> {
            None
        }
    }

    fn listener(reauth_ms: i64) -> Arc<ListenerSecurity> {
        Arc::new(ListenerSecurity {
            name: "SASL_PLAINTEXT".into(),
            protocol: SecurityProtocol::SaslPlaintext,
            tls: None,
            sasl: Some(Arc::new(SaslServerConfig {
                mechanisms: vec![Mechanism::Plain],
                plain_users: [("alice".into(), "pw".into()), ("bob".into(), "pw".into())].into(),
                max_reauth_ms: reauth_ms,
                ..Default::default()
            })),
            principal_rules: Arc::new(PrincipalRules::default()),
            max_receive_size: 524_288,
            failed_auth_delay: Duration::from_millis(100),
            controller: false,
        })
    }

    fn peer() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 1))
    }

    #[test]
    fn only_api_versions_and_the_handshake_before_authentication() {
        let s = Session::new(listener(0), peer());
        let now = Instant::now();
        assert_eq!(s.gate(Some(ApiKey::ApiVersions), now), Gate::Serve);
        assert_eq!(s.gate(Some(ApiKey::SaslHandshake), now), Gate::Sasl);
        assert!(matches!(
            s.gate(Some(ApiKey::Metadata), now),
            Gate::Close(_)
        ));
        assert!(matches!(s.gate(None, now), Gate::Close(_)));
        assert_eq!(s.max_frame(100 << 20), 524_288);
    }

    #[test]
    fn an_exchange_then_expiry_and_re_authentication() {
        let mut s = Session::new(listener(5000), peer());
        let t0 = Instant::now();
        assert_eq!(
            s.handshake("SCRAM-SHA-256", 1),
            Err(HandshakeError::Unsupported("SCRAM-SHA-256".into()))
        );
        s.handshake("PLAIN", 1).unwrap();
        assert!(matches!(s.gate(Some(ApiKey::Metadata), t0), Gate::Close(_)));
        let done = s.authenticate(b"\0alice\0pw", 2, &NoCreds, t0, 0, "n");
        assert_eq!(
            done,
            Authenticated::Done {
                token: vec![],
                session_lifetime_ms: 5000
            }
        );
        assert_eq!(s.principal.to_string(), "User:alice");
        assert_eq!(s.max_frame(100 << 20), 100 << 20);
        assert_eq!(s.gate(Some(ApiKey::Metadata), t0), Gate::Serve);
        let later = t0 + Duration::from_secs(6);
        assert!(matches!(
            s.gate(Some(ApiKey::Metadata), later),
            Gate::Close(_)
        ));
        // Re-authentication as the same user renews the session.
        assert_eq!(s.gate(Some(ApiKey::SaslHandshake), later), Gate::Sasl);
        s.handshake("PLAIN", 1).unwrap();
        assert!(matches!(
            s.authenticate(b"\0alice\0pw", 2, &NoCreds, later, 0, "n"),
            Authenticated::Done { .. }
        ));
        assert_eq!(s.gate(Some(ApiKey::Metadata), later), Gate::Serve);
        // As another user: refused.
        s.handshake("PLAIN", 1).unwrap();
        assert!(matches!(
            s.authenticate(b"\0bob\0pw", 2, &NoCreds, later, 0, "n"),
            Authenticated::Failed { .. }
        ));
    }

    #[test]
    fn a_token_past_its_exp_within_the_skew_leaves_no_session() {
        use crate::security::sasl::{OAuthValidator, UnsecuredValidator};
        let l = Arc::new(ListenerSecurity {
            sasl: Some(Arc::new(SaslServerConfig {
                mechanisms: vec![Mechanism::OAuthBearer],
                oauth: OAuthValidator::Unsecured(UnsecuredValidator {
                    principal_claim: "sub".into(),
                    clock_skew_ms: 30_000,
                }),
                ..Default::default()
            })),
            ..Arc::try_unwrap(listener(0)).unwrap()
        });
        let now_ms = 1_800_000_000_000i64;
        let token = |exp_s: i64| {
            use base64::Engine;
            let b = |j: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(j);
            let claims = format!(r#"{{"sub":"alice","exp":{exp_s}}}"#);
            format!(
                "n,,\u{1}auth=Bearer {}.{}.\u{1}\u{1}",
                b(r#"{"alg":"none"}"#),
                b(&claims)
            )
            .into_bytes()
        };
        let t0 = Instant::now();
        let mut s = Session::new(l.clone(), peer());
        s.handshake("OAUTHBEARER", 1).unwrap();
        assert_eq!(
            s.authenticate(&token(now_ms / 1000 - 5), 2, &NoCreds, t0, now_ms, "n"),
            Authenticated::Done {
                token: vec![],
                session_lifetime_ms: 0
            }
        );
        assert!(matches!(s.gate(Some(ApiKey::Metadata), t0), Gate::Close(_)));
        let mut s = Session::new(l, peer());
        s.handshake("OAUTHBEARER", 1).unwrap();
        assert_eq!(
            s.authenticate(&token(now_ms / 1000 + 60), 2, &NoCreds, t0, now_ms, "n"),
            Authenticated::Done {
                token: vec![],
                session_lifetime_ms: 60_000
            }
        );
        assert_eq!(s.gate(Some(ApiKey::Metadata), t0), Gate::Serve);
    }

    #[test]
    fn a_wrong_password_fails_with_the_generic_text() {
        let mut s = Session::new(listener(0), peer());
        s.handshake("PLAIN", 0).unwrap();
        assert_eq!(
            s.gate(Some(ApiKey::Metadata), Instant::now()),
            Gate::RawToken
        );
        match s.authenticate(b"\0alice\0nope", -1, &NoCreds, Instant::now(), 0, "n") {
            Authenticated::Failed { message, detail } => {
                assert!(message.contains("invalid credentials with SASL mechanism PLAIN"));
                assert!(!message.contains("alice") && !detail.contains("nope"));
            }
            other => panic!("{other:?}"),
        }
        assert!(!s.authenticated());
    }

    #[test]
    fn a_v0_client_cannot_re_authenticate() {
        let mut s = Session::new(listener(0), peer());
        s.handshake("PLAIN", 1).unwrap();
        s.authenticate(b"\0alice\0pw", 0, &NoCreds, Instant::now(), 0, "n");
        assert!(matches!(
            s.handshake("PLAIN", 1),
            Err(HandshakeError::IllegalState(_))
        ));
    }
}
