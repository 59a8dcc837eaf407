//! The server side of SASL as a Kafka broker runs it (Kafka's
//! `SaslServerAuthenticator` and its mechanisms), without I/O: a
//! [`SaslExchange`] takes the client's tokens and gives the server's, and
//! at the end the authenticated principal and how long the session may
//! last (KIP-368).
//!
//! Mechanisms: PLAIN against the JAAS `user_<name>` entries of the
//! listener, SCRAM-SHA-256/512 against the credentials of the metadata log
//! (KIP-554), OAUTHBEARER with Kafka's unsecured JWS validator (the
//! default when no validator class is configured: `alg` `none`, the
//! principal from the `sub` claim, `exp` required) or, when the listener
//! names Kafka's `OAuthBearerValidatorCallbackHandler`, signed tokens
//! checked against a JWKS ([`super::oauth`]). GSSAPI is not offered.
//! Every failure of credentials is told to the client with the same text
//! (see [`SaslFailure::client_message`]) so it does not learn whether the
//! user exists; the detail goes to the log, never a password or token.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;
use subtle::ConstantTimeEq;

use super::oauth::JwksValidator;
use super::principal::KafkaPrincipal;
use super::scram::{ClientFirst, ScramCredential, ScramError, ScramMechanism, ScramServer};

/// A SASL mechanism Fjord serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mechanism {
    /// `PLAIN` (RFC 4616).
    Plain,
    /// `SCRAM-SHA-256` or `SCRAM-SHA-512`.
    Scram(ScramMechanism),
    /// `OAUTHBEARER` (RFC 7628, KIP-255).
    OAuthBearer,
}

impl Mechanism {
    /// The mechanism's name in SaslHandshake.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::Scram(s) => s.name(),
            Mechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// The mechanism named `name` (exactly, as Kafka compares them).
    pub fn from_name(name: &str) -> Option<Mechanism> {
        match name {
            "PLAIN" => Some(Mechanism::Plain),
            "OAUTHBEARER" => Some(Mechanism::OAuthBearer),
            other => ScramMechanism::from_name(other).map(Mechanism::Scram),
        }
    }
}

/// Where SCRAM credentials come from (the metadata image on the
/// connection's shard).
pub trait CredentialSource {
    /// `user`'s credential for `mechanism`, if it has one.
    fn scram(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential>;
}

/// What a SASL listener accepts, from its configuration.
#[derive(Debug, Clone, Default)]
pub struct SaslServerConfig {
    /// `sasl.enabled.mechanisms` of the listener, in the order given.
    pub mechanisms: Vec<Mechanism>,
    /// The PLAIN users (`user_<name>` of the PLAIN JAAS line).
    pub plain_users: BTreeMap<String, String>,
    /// How OAUTHBEARER tokens are checked.
    pub oauth: OAuthValidator,
    /// `connections.max.reauth.ms` (0: sessions do not expire).
    pub max_reauth_ms: i64,
    /// Secret mixed into the salt answered for unknown SCRAM users.
    pub fake_salt_secret: Vec<u8>,
}

/// How a listener checks OAUTHBEARER tokens: Kafka's server callback
/// handler class of the listener
/// (`listener.name.<l>.oauthbearer.sasl.server.callback.handler.class`).
#[derive(Debug, Clone)]
pub enum OAuthValidator {
    /// No class, or Kafka's unsecured one: `alg` `none` tokens.
    Unsecured(UnsecuredValidator),
    /// `OAuthBearerValidatorCallbackHandler`: signed tokens checked
    /// against the JWKS of `sasl.oauthbearer.jwks.endpoint.url`.
    Jwks(Arc<JwksValidator>),
}

impl Default for OAuthValidator {
    fn default() -> OAuthValidator {
        OAuthValidator::Unsecured(UnsecuredValidator::default())
    }
}

/// Kafka's unsecured OAUTHBEARER validator options
/// (`unsecuredValidatorPrincipalClaimName`, default `sub`;
/// `unsecuredValidatorAllowableClockSkewMs`, default 0).
#[derive(Debug, Clone)]
pub struct UnsecuredValidator {
    /// The claim that names the principal.
    pub principal_claim: String,
    /// Allowed clock skew (ms).
    pub clock_skew_ms: i64,
}

impl Default for UnsecuredValidator {
    fn default() -> UnsecuredValidator {
        UnsecuredValidator {
            principal_claim: "sub".to_string(),
            clock_skew_ms: 0,
        }
    }
}

/// Why an exchange failed; the detail is for the broker's log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslFailure {
    /// PLAIN: a malformed message, an unknown user or a wrong password.
    #[error("PLAIN: {0}")]
    Plain(&'static str),
    /// SCRAM's own error.
    #[error("{0}")]
    Scram(#[from] ScramError),
    /// OAUTHBEARER: a malformed message or an invalid token.
    #[error("OAUTHBEARER: {0}")]
    OAuthBearer(String),
    /// A token came after the exchange ended.
    #[error("the exchange is already complete")]
    Complete,
}

impl SaslFailure {
    /// The text sent to the client in SaslAuthenticate's `error_message`:
    /// the same for every credential problem, naming only the mechanism
    /// (Kafka's "Authentication failed during authentication due to invalid
    /// credentials with SASL mechanism X").
    pub fn client_message(mechanism: Mechanism) -> String {
        format!(
            "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
            mechanism.name()
        )
    }

    /// The `error_message` for this failure of an exchange of `mechanism`:
    /// a refused OAUTHBEARER token ends with the error challenge as the
    /// message, as Kafka's OAUTHBEARER server ends it
    /// (`{"status":"invalid_token"}`, RFC 7628 §3.2.2); every other
    /// failure gets [`SaslFailure::client_message`].
    pub fn message_for(&self, mechanism: Mechanism) -> String {
        match (self, mechanism) {
            (SaslFailure::OAuthBearer(_), Mechanism::OAuthBearer) => INVALID_TOKEN.to_string(),
            _ => SaslFailure::client_message(mechanism),
        }
    }
}

/// OAUTHBEARER's error challenge for a token the broker refuses.
const INVALID_TOKEN: &str = r#"{"status":"invalid_token"}"#;

/// One step's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send these bytes; the client answers with the next token.
    Continue(Vec<u8>),
    /// Authenticated: send these bytes (may be empty).
    Done {
        /// The last server token.
        response: Vec<u8>,
        /// Who the client is.
        principal: KafkaPrincipal,
        /// When the credential itself expires (ms since the epoch; an
        /// OAUTHBEARER token's `exp`), if it does.
        expires_at_ms: Option<i64>,
    },
    /// OAUTHBEARER's error challenge (`{"status":"invalid_token"}`): send
    /// it; the client's answer (`\x01`) ends the exchange with the failure.
    Challenge(Vec<u8>, SaslFailure),
}

#[derive(Debug)]
enum State {
    Start,
    ScramFinal(Box<ScramServer>),
    OAuthFailed(SaslFailure),
    Done,
}

/// One authentication exchange on a connection.
#[derive(Debug)]
pub struct SaslExchange {
    mechanism: Mechanism,
    state: State,
}

impl SaslExchange {
    /// A new exchange for `mechanism` (one of the listener's).
    pub fn new(mechanism: Mechanism) -> SaslExchange {
        SaslExchange {
            mechanism,
            state: State::Start,
        }
    }

    /// The mechanism of this exchange.
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// Takes the client's next token; gives the server's answer or why the
    /// exchange failed (then the connection is closed). `now_ms` (ms since
    /// the epoch) checks token expiry; `nonce` is fresh random printable
    /// text for SCRAM.
    pub fn step(
        &mut self,
        token: &[u8],
        config: &SaslServerConfig,
        credentials: &dyn CredentialSource,
        now_ms: i64,
        nonce: &str,
    ) -> Result<Step, SaslFailure> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Done => Err(SaslFailure::Complete),
            State::OAuthFailed(f) => Err(f),
            State::ScramFinal(server) => {
                let response = server.finish(token)?;
                Ok(Step::Done {
                    response,
                    principal: KafkaPrincipal::user(server.user()),
                    expires_at_ms: None,
                })
            }
            State::Start => match self.mechanism {
                Mechanism::Plain => plain(token, &config.plain_users),
                Mechanism::Scram(mech) => {
                    let first = ClientFirst::parse(token)?;
                    if first.token_auth {
                        // Delegation tokens are not supported.
                        return Err(ScramError::Credentials.into());
                    }
                    let cred = credentials.scram(&first.user, mech);
                    let fake = fake_salt(&config.fake_salt_secret, &first.user);
                    let (server, msg) = ScramServer::start(mech, first, cred, fake, nonce);
                    self.state = State::ScramFinal(Box::new(server));
                    Ok(Step::Continue(msg))
                }
                Mechanism::OAuthBearer => match oauthbearer(token, &config.oauth, now_ms) {
                    Ok((principal, exp)) => Ok(Step::Done {
                        response: Vec::new(),
                        principal,
                        expires_at_ms: Some(exp),
                    }),
                    Err(f) => {
                        self.state = State::OAuthFailed(f.clone());
                        Ok(Step::Challenge(INVALID_TOKEN.as_bytes().to_vec(), f))
                    }
                },
            },
        }
    }
}

/// A salt for a user that has no credential: stable for the user on this
/// broker (so two tries look alike), unrelated to any real one.
fn fake_salt(secret: &[u8], user: &str) -> Vec<u8> {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(secret);
    h.update(user.as_bytes());
    h.finalize()[..16].to_vec()
}

/// PLAIN (RFC 4616): `[authzid] NUL authcid NUL passwd`, checked against
/// the listener's JAAS users in constant time.
fn plain(token: &[u8], users: &BTreeMap<String, String>) -> Result<Step, SaslFailure> {
    let parts: Vec<&[u8]> = token.split(|b| *b == 0).collect();
    let [authzid, user, password] = parts.as_slice() else {
        return Err(SaslFailure::Plain("expected authzid NUL user NUL password"));
    };
    let user = std::str::from_utf8(user).map_err(|_| SaslFailure::Plain("user is not UTF-8"))?;
    if user.is_empty() {
        return Err(SaslFailure::Plain("empty user name"));
    }
    if !authzid.is_empty() && *authzid != user.as_bytes() {
        return Err(SaslFailure::Plain("authorization id differs from the user"));
    }
    // Compared even for an unknown user, against a dummy, so the time
    // taken does not tell.
    let expected = users.get(user);
    let dummy = String::from("\u{0}unknown-user\u{0}");
    let ok = bool::from(expected.unwrap_or(&dummy).as_bytes().ct_eq(password));
    if !ok || expected.is_none() {
        return Err(SaslFailure::Plain("invalid user name or password"));
    }
    Ok(Step::Done {
        response: Vec::new(),
        principal: KafkaPrincipal::user(user),
        expires_at_ms: None,
    })
}

/// OAUTHBEARER's client-first message (RFC 7628): GS2 header, then
/// `\x01`-separated `key=value` pairs with `auth=Bearer <token>`, ending
/// in `\x01\x01`; the token checked by the listener's validator. Gives the
/// principal and the token's expiry (ms).
fn oauthbearer(
    token: &[u8],
    v: &OAuthValidator,
    now_ms: i64,
) -> Result<(KafkaPrincipal, i64), SaslFailure> {
    let bad = |s: &str| SaslFailure::OAuthBearer(s.to_string());
    let text = std::str::from_utf8(token).map_err(|_| bad("not UTF-8"))?;
    let (gs2, rest) = text
        .split_once('\u{1}')
        .ok_or_else(|| bad("no GS2 header"))?;
    let mut gs2_parts = gs2.splitn(3, ',');
    let cb = gs2_parts.next().unwrap_or_default();
    if cb != "n" && cb != "y" {
        return Err(bad("channel binding is not supported"));
    }
    let authzid = gs2_parts
        .next()
        .and_then(|a| a.strip_prefix("a="))
        .map(str::to_string);
    let mut bearer = None;
    for kv in rest.split('\u{1}').filter(|s| !s.is_empty()) {
        if let Some(t) = kv.strip_prefix("auth=") {
            let (scheme, tok) = t.split_once(' ').ok_or_else(|| bad("malformed auth"))?;
            if !scheme.eq_ignore_ascii_case("Bearer") {
                return Err(bad("not a Bearer token"));
            }
            bearer = Some(tok.trim().to_string());
        }
    }
    let jws = bearer.ok_or_else(|| bad("no auth=Bearer"))?;
    let (principal, exp_ms) = match v {
        OAuthValidator::Unsecured(u) => unsecured(&jws, u, now_ms)?,
        OAuthValidator::Jwks(j) => {
            let t = j
                .validate(&jws, now_ms)
                .map_err(|e| SaslFailure::OAuthBearer(e.to_string()))?;
            (t.principal, t.expires_at_ms)
        }
    };
    if authzid.as_deref().is_some_and(|a| a != principal) {
        return Err(bad("authorization id differs from the token's principal"));
    }
    Ok((KafkaPrincipal::user(principal), exp_ms))
}

/// An `alg` `none` token checked as Kafka's unsecured validator does: the
/// principal claim and `exp` required, `iat` not in the future.
fn unsecured(jws: &str, v: &UnsecuredValidator, now_ms: i64) -> Result<(String, i64), SaslFailure> {
    let bad = |s: &str| SaslFailure::OAuthBearer(s.to_string());
    let mut parts = jws.split('.');
    let (Some(h), Some(p), Some(sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("the token is not a compact JWS"));
    };
    let json = |s: &str| -> Result<serde_json::Value, SaslFailure> {
        let b = B64URL
            .decode(s.trim_end_matches('='))
            .map_err(|_| bad("token part is not base64url"))?;
        serde_json::from_slice(&b).map_err(|_| bad("token part is not JSON"))
    };
    let header = json(h)?;
    if header.get("alg").and_then(|a| a.as_str()) != Some("none") || !sig.is_empty() {
        return Err(bad("the unsecured validator takes only alg none tokens"));
    }
    let claims = json(p)?;
    let principal = claims
        .get(&v.principal_claim)
        .and_then(|s| s.as_str())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad("no principal claim"))?;
    let exp_ms = claims
        .get("exp")
        .and_then(|e| e.as_f64())
        .map(|e| (e * 1000.0) as i64)
        .ok_or_else(|| bad("no exp claim"))?;
    if exp_ms + v.clock_skew_ms <= now_ms {
        return Err(bad("the token expired"));
    }
    if let Some(iat) = claims.get("iat").and_then(|e| e.as_f64()) {
        if (iat * 1000.0) as i64 - v.clock_skew_ms > now_ms {
            return Err(bad("the token is issued in the future"));
        }
    }
    Ok((principal.to_string(), exp_ms))
}

/// The lifetime SaslAuthenticate v1+ announces (KIP-368): the smaller of
/// `connections.max.reauth.ms` and the time left on the credential; 0 when
/// neither limits it.
pub fn session_lifetime_ms(max_reauth_ms: i64, expires_at_ms: Option<i64>, now_ms: i64) -> i64 {
    let left = expires_at_ms.map(|e| (e - now_ms).max(1));
    match (max_reauth_ms > 0, left) {
        (true, Some(l)) => max_reauth_ms.min(l),
        (true, None) => max_reauth_ms,
        (false, Some(l)) => l,
        (false, None) => 0,
    }
}

/// A PLAIN client's single token (Fjord's own connections).
pub fn plain_client_token(user: &str, password: &str) -> Vec<u8> {
    format!("\u{0}{user}\u{0}{password}").into_bytes()
}

/// The client side of an exchange (this broker authenticating to another
/// node): PLAIN, SCRAM, or OAUTHBEARER with an unsecured token for the
/// configured principal (Kafka's `unsecuredLoginStringClaim_sub`, one hour).
#[derive(Debug)]
pub enum SaslClient {
    /// PLAIN: one token, then done.
    Plain,
    /// SCRAM: client-first sent, the server-first awaited, then the
    /// server-final.
    Scram(Box<super::scram::ScramClient>, bool),
    /// OAUTHBEARER: one token, then done.
    OAuthBearer,
}

impl SaslClient {
    /// Starts an exchange for `mechanism` as `user` with `password`; gives
    /// the client and its first token. `now_ms` dates an OAUTHBEARER token;
    /// `nonce` is fresh random printable text.
    pub fn start(
        mechanism: Mechanism,
        user: &str,
        password: &str,
        now_ms: i64,
        nonce: &str,
    ) -> (SaslClient, Vec<u8>) {
        match mechanism {
            Mechanism::Plain => (SaslClient::Plain, plain_client_token(user, password)),
            Mechanism::Scram(m) => {
                let (c, first) = super::scram::ScramClient::start(m, user, password, nonce);
                (SaslClient::Scram(Box::new(c), false), first)
            }
            Mechanism::OAuthBearer => {
                let header = B64URL.encode(br#"{"alg":"none"}"#);
                let claims = serde_json::json!({
                    "sub": user,
                    "iat": now_ms as f64 / 1000.0,
                    "exp": (now_ms + 3_600_000) as f64 / 1000.0,
                });
                let payload = B64URL.encode(claims.to_string());
                let token = format!("n,,\u{1}auth=Bearer {header}.{payload}.\u{1}\u{1}");
                (SaslClient::OAuthBearer, token.into_bytes())
            }
        }
    }

    /// Takes the server's token; gives the next one to send, or None when
    /// the exchange is complete. Errors when the server's token is wrong
    /// (SCRAM's signature, a malformed message). SCRAM's client-final runs
    /// PBKDF2: call it off the reactor.
    pub fn step(&mut self, server: &[u8]) -> Result<Option<Vec<u8>>, SaslFailure> {
        match self {
            SaslClient::Plain | SaslClient::OAuthBearer => Ok(None),
            SaslClient::Scram(c, done_first) => {
                if !*done_first {
                    *done_first = true;
                    Ok(Some(c.step(server)?))
                } else {
                    c.finish(server)?;
                    Ok(None)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Creds(BTreeMap<(String, ScramMechanism), ScramCredential>);
    impl CredentialSource for Creds {
        fn scram(&self, user: &str, m: ScramMechanism) -> Option<ScramCredential> {
            self.0.get(&(user.to_string(), m)).cloned()
        }
    }

    fn config() -> SaslServerConfig {
        SaslServerConfig {
            mechanisms: vec![Mechanism::Plain],
            plain_users: [("alice".to_string(), "pw".to_string())].into(),
            fake_salt_secret: b"secret".to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn plain_accepts_only_the_right_password() {
        let none = Creds(BTreeMap::new());
        let run = |t: &[u8]| SaslExchange::new(Mechanism::Plain).step(t, &config(), &none, 0, "n");
        match run(b"\0alice\0pw").unwrap() {
            Step::Done { principal, .. } => assert_eq!(principal.to_string(), "User:alice"),
            other => panic!("{other:?}"),
        }
        assert!(run(b"alice\0alice\0pw").is_ok());
        for bad in [
            &b"\0alice\0wrong"[..],
            b"\0bob\0pw",
            b"bob\0alice\0pw",
            b"\0\0pw",
            b"alice",
            b"\0a\0b\0c",
        ] {
            assert!(run(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn scram_through_the_exchange() {
        let m = ScramMechanism::Sha256;
        let cred = ScramCredential::from_password(m, "pw", b"salt".to_vec(), 4096);
        let creds = Creds([(("bob".to_string(), m), cred)].into());
        let mut ex = SaslExchange::new(Mechanism::Scram(m));
        let (mut client, first) = super::super::scram::ScramClient::start(m, "bob", "pw", "c1");
        let Step::Continue(sf) = ex.step(&first, &config(), &creds, 0, "s1").unwrap() else {
            panic!("server-first expected")
        };
        let cf = client.step(&sf).unwrap();
        match ex.step(&cf, &config(), &creds, 0, "s2").unwrap() {
            Step::Done {
                response,
                principal,
                ..
            } => {
                client.finish(&response).unwrap();
                assert_eq!(principal, KafkaPrincipal::user("bob"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            ex.step(b"again", &config(), &creds, 0, "s3"),
            Err(SaslFailure::Complete)
        );
    }

    fn unsecured(claims: &str) -> Vec<u8> {
        let h = B64URL.encode(br#"{"alg":"none"}"#);
        let p = B64URL.encode(claims.as_bytes());
        format!("n,,\u{1}auth=Bearer {h}.{p}.\u{1}\u{1}").into_bytes()
    }

    #[test]
    fn oauthbearer_unsecured_tokens() {
        let none = Creds(BTreeMap::new());
        let now = 1_000_000_000_000;
        let ok = unsecured(r#"{"sub":"admin","exp":1000000060.5,"iat":999999999}"#);
        match SaslExchange::new(Mechanism::OAuthBearer)
            .step(&ok, &config(), &none, now, "n")
            .unwrap()
        {
            Step::Done {
                principal,
                expires_at_ms,
                ..
            } => {
                assert_eq!(principal.to_string(), "User:admin");
                assert_eq!(expires_at_ms, Some(1_000_000_060_500));
            }
            other => panic!("{other:?}"),
        }
        for bad in [
            unsecured(r#"{"sub":"admin","exp":999999999}"#),
            unsecured(r#"{"exp":1000000060}"#),
            unsecured(r#"{"sub":"admin"}"#),
            b"n,,\x01auth=Basic abc\x01\x01".to_vec(),
            b"n,,\x01\x01".to_vec(),
            b"garbage".to_vec(),
        ] {
            let mut ex = SaslExchange::new(Mechanism::OAuthBearer);
            match ex.step(&bad, &config(), &none, now, "n") {
                Ok(Step::Challenge(c, _)) => {
                    assert_eq!(c, br#"{"status":"invalid_token"}"#);
                    // The client's \x01 ends it with the failure.
                    assert!(ex.step(b"\x01", &config(), &none, now, "n").is_err());
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn session_lifetimes() {
        assert_eq!(session_lifetime_ms(0, None, 0), 0);
        assert_eq!(session_lifetime_ms(5000, None, 0), 5000);
        assert_eq!(session_lifetime_ms(5000, Some(2000), 0), 2000);
        assert_eq!(session_lifetime_ms(0, Some(9000), 1000), 8000);
    }
}
