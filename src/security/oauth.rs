//! OAUTHBEARER tokens signed by an identity provider and checked against
//! its JSON Web Key Set (RFC 7517), as Kafka's
//! `OAuthBearerValidatorCallbackHandler` (KIP-768) checks them when a
//! listener names that class in
//! `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class`.
//!
//! The key set comes from the file of `sasl.oauthbearer.jwks.endpoint.url`
//! (a `file://` URL; https endpoints are refused at start, see
//! docs/decisions/oauth-jwks-https.md). It is read when the broker starts
//! (an unreadable or malformed set stops it) and read again every
//! `sasl.oauthbearer.jwks.endpoint.refresh.ms` by a thread of its own, never
//! on a shard's reactor; a set that cannot be read then keeps the previous
//! keys and is logged.
//!
//! A token passes when (Kafka's rules, jose4j underneath):
//! * it is a compact JWS whose `alg` is asymmetric (RS*, PS*, ES256,
//!   ES384, EdDSA) and whose signature verifies with the key of the set its
//!   `kid` names (without a `kid`: the one key of the set fit for the
//!   algorithm);
//! * `exp` is a number and `now - skew < exp`; `iat` is a number not after
//!   `exp` (an `iat` ahead of the clock is taken, as Kafka 4.4 takes it);
//!   `nbf`, when present, `<= now + skew` (skew:
//!   `sasl.oauthbearer.clock.skew.seconds`). A token past its `exp` but
//!   within the skew passes with a session of no time left (KIP-368): its
//!   connection is closed at its first request, as on Kafka 4.4;
//! * `aud` holds one of `sasl.oauthbearer.expected.audience` when that is
//!   set; `iss` equals `sasl.oauthbearer.expected.issuer` when that is set;
//! * the claim `sasl.oauthbearer.sub.claim.name` is a non-empty string (the
//!   principal). The scope claim (`sasl.oauthbearer.scope.claim.name`) is
//!   not checked: Kafka 4.4 serves a token whatever its scope claim holds,
//!   and no authorizer of Kafka's or Fjord's reads scopes.
//!
//! The principal is `User:<sub>`; the token's `exp` bounds the session
//! (KIP-368).

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

/// Kafka's JWKS validator class: naming it in
/// `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class`
/// turns on the checks of this module for the listener.
pub const VALIDATOR_HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";

/// Kafka's unsecured validator class (the default when no handler class is
/// set): `alg` `none` tokens, see `sasl::UnsecuredValidator`.
pub const UNSECURED_HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler";

/// Why a key set could not be used (the broker refuses to start with the
/// key and file named; later, the refresh keeps the old keys).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwksError {
    /// The file cannot be read.
    #[error("cannot read the file: {0}")]
    Read(String),
    /// The file is not a JSON object with a `keys` array.
    #[error("not a JSON Web Key Set (a JSON object with a \"keys\" array): {0}")]
    Malformed(String),
    /// No key of the set can verify signatures.
    #[error("no RSA, EC (P-256, P-384) or Ed25519 signing key in the set ({0} keys skipped)")]
    NoKeys(usize),
}

/// Why a token is refused (for the broker's log; the client only gets
/// `{"status":"invalid_token"}` and SASL_AUTHENTICATION_FAILED).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a compact JWS with a known asymmetric `alg`.
    #[error("not a signed token this validator takes: {0}")]
    Malformed(String),
    /// No key of the set fits the token's `kid` and `alg`.
    #[error("no key in the JWKS for kid {kid:?} and alg {alg}")]
    NoKey {
        /// The token's `kid`.
        kid: Option<String>,
        /// The token's `alg`.
        alg: String,
    },
    /// The signature does not verify.
    #[error("the signature does not verify: {0}")]
    Signature(String),
    /// A required claim is missing or has the wrong type.
    #[error("claim {0} is missing or not of the right type")]
    Claim(String),
    /// `iat` is after `exp`.
    #[error("the token is issued after it expires (iat > exp)")]
    IssuedAfterExpiry,
    /// `exp` has passed (beyond the allowed skew).
    #[error("the token expired")]
    Expired,
    /// `nbf` is still ahead (beyond the allowed skew).
    #[error("the token is not valid yet (nbf)")]
    NotYetValid,
    /// `aud` holds none of the expected audiences.
    #[error("the audience is not one of the expected ones")]
    Audience,
    /// `iss` is not the expected issuer.
    #[error("the issuer is not the expected one")]
    Issuer,
}

/// The kind of a key, which decides the algorithms it verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl KeyKind {
    fn verifies(self, alg: Algorithm) -> bool {
        use Algorithm::*;
        match self {
            KeyKind::Rsa => matches!(alg, RS256 | RS384 | RS512 | PS256 | PS384 | PS512),
            KeyKind::P256 => alg == ES256,
            KeyKind::P384 => alg == ES384,
            KeyKind::Ed25519 => alg == EdDSA,
        }
    }
}

/// One signing key of the set.
#[derive(Clone)]
struct VerificationKey {
    kid: Option<String>,
    alg: Option<Algorithm>,
    kind: KeyKind,
    key: DecodingKey,
}

impl std::fmt::Debug for VerificationKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerificationKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// The signing keys of a JSON Web Key Set.
#[derive(Debug, Clone)]
pub struct JwksKeys {
    keys: Vec<VerificationKey>,
}

impl JwksKeys {
    /// Reads a key set: RSA (`n`, `e`), EC P-256/P-384 (`x`, `y`) and OKP
    /// Ed25519 (`x`) keys; keys for encryption (`use` other than `sig`),
    /// symmetric (`oct`) keys (a key set is public: anyone reading it could
    /// sign) and keys this validator cannot use are skipped.
    pub fn parse(text: &[u8]) -> Result<JwksKeys, JwksError> {
        let set: Value =
            serde_json::from_slice(text).map_err(|e| JwksError::Malformed(e.to_string()))?;
        let list = set
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| JwksError::Malformed("no \"keys\" array".into()))?;
        let keys: Vec<VerificationKey> = list.iter().filter_map(one_key).collect();
        if keys.is_empty() {
            return Err(JwksError::NoKeys(list.len()));
        }
        Ok(JwksKeys { keys })
    }

    /// How many usable keys the set has.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set has no usable key (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key for a token's `kid` and `alg`: the key with that `kid` fit
    /// for the algorithm; without a `kid`, the only key fit for it.
    fn select(&self, kid: Option<&str>, alg: Algorithm) -> Option<&VerificationKey> {
        let mut fit = self
            .keys
            .iter()
            .filter(|k| k.kind.verifies(alg) && k.alg.is_none_or(|a| a == alg));
        match kid {
            Some(kid) => fit.find(|k| k.kid.as_deref() == Some(kid)),
            None => match (fit.next(), fit.next()) {
                (Some(k), None) => Some(k),
                _ => None,
            },
        }
    }
}

fn one_key(v: &Value) -> Option<VerificationKey> {
    let s = |name: &str| v.get(name).and_then(Value::as_str);
    if s("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let alg = match s("alg") {
        None => None,
        Some(a) => Some(Algorithm::from_str(a).ok()?),
    };
    let (kind, key) = match (s("kty")?, s("crv")) {
        ("RSA", _) => (
            KeyKind::Rsa,
            DecodingKey::from_rsa_components(s("n")?, s("e")?).ok()?,
        ),
        ("EC", Some("P-256")) => (
            KeyKind::P256,
            DecodingKey::from_ec_components(s("x")?, s("y")?).ok()?,
        ),
        ("EC", Some("P-384")) => (
            KeyKind::P384,
            DecodingKey::from_ec_components(s("x")?, s("y")?).ok()?,
        ),
        ("OKP", Some("Ed25519")) => (
            KeyKind::Ed25519,
            DecodingKey::from_ed_components(s("x")?).ok()?,
        ),
        _ => return None,
    };
    if alg.is_some_and(|a| !kind.verifies(a)) {
        return None;
    }
    Some(VerificationKey {
        kid: s("kid").map(str::to_string),
        alg,
        kind,
        key,
    })
}

/// Where the key set is read from: the file of a `file://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwksFile {
    /// The key that names it (`sasl.oauthbearer.jwks.endpoint.url` or its
    /// `listener.name.` form), for messages.
    pub key: String,
    /// The file.
    pub path: PathBuf,
}

impl JwksFile {
    /// Reads and parses the set (blocking file I/O: at start, or on the
    /// refresh thread).
    pub fn load(&self) -> Result<JwksKeys, JwksError> {
        let text = std::fs::read(&self.path).map_err(|e| JwksError::Read(e.to_string()))?;
        JwksKeys::parse(&text)
    }
}

/// The claim checks of `sasl.oauthbearer.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRules {
    /// `sasl.oauthbearer.expected.audience` (empty: `aud` not checked).
    pub expected_audience: Vec<String>,
    /// `sasl.oauthbearer.expected.issuer` (None: `iss` not checked).
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.sub.claim.name` (default `sub`): the principal.
    pub sub_claim: String,
    /// `sasl.oauthbearer.scope.claim.name` (default `scope`): read as
    /// Kafka reads it, not checked (see the module's rules).
    pub scope_claim: String,
    /// `sasl.oauthbearer.clock.skew.seconds` (default 30), in ms.
    pub clock_skew_ms: i64,
}

impl Default for ClaimRules {
    fn default() -> ClaimRules {
        ClaimRules {
            expected_audience: Vec::new(),
            expected_issuer: None,
            sub_claim: "sub".into(),
            scope_claim: "scope".into(),
            clock_skew_ms: 30_000,
        }
    }
}

/// Kafka's JWKS validator: the current key set (replaced by the refresh
/// thread) and the claim rules.
#[derive(Debug)]
pub struct JwksValidator {
    keys: RwLock<Arc<JwksKeys>>,
    /// The claim rules.
    pub rules: ClaimRules,
}

/// A token that passed: who it names and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidToken {
    /// The sub claim's value.
    pub principal: String,
    /// `exp`, in ms since the epoch.
    pub expires_at_ms: i64,
}

impl JwksValidator {
    /// A validator with `keys` and `rules`.
    pub fn new(keys: JwksKeys, rules: ClaimRules) -> JwksValidator {
        JwksValidator {
            keys: RwLock::new(Arc::new(keys)),
            rules,
        }
    }

    /// Puts a newly read key set in place.
    pub fn replace_keys(&self, keys: JwksKeys) {
        let mut guard = self.keys.write().unwrap_or_else(|e| e.into_inner());
        *guard = Arc::new(keys);
    }

    fn current(&self) -> Arc<JwksKeys> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Reads `file` again every `every` on a thread of its own, for as long
    /// as `this` is alive; a set that cannot be read is logged and the
    /// previous one kept.
    pub fn refresh_from(this: &Arc<JwksValidator>, file: JwksFile, every: Duration) {
        let weak: Weak<JwksValidator> = Arc::downgrade(this);
        let spawned = std::thread::Builder::new()
            .name("jwks-refresh".into())
            .spawn(move || loop {
                std::thread::sleep(every);
                let loaded = file.load();
                let Some(v) = weak.upgrade() else { return };
                match loaded {
                    Ok(keys) => v.replace_keys(keys),
                    Err(e) => log::warn!(
                        "{}: re-reading {} failed, keeping the previous JWKS: {e}",
                        file.key,
                        file.path.display()
                    ),
                }
            });
        if let Err(e) = spawned {
            log::warn!("the JWKS refresh thread did not start: {e}");
        }
    }

    /// Checks `jws` at `now_ms` (ms since the epoch); see the module's
    /// rules.
    pub fn validate(&self, jws: &str, now_ms: i64) -> Result<ValidToken, TokenError> {
        let header =
            jsonwebtoken::decode_header(jws).map_err(|e| TokenError::Malformed(e.to_string()))?;
        let alg = header.alg;
        if matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
            return Err(TokenError::Malformed(format!(
                "{alg:?} is symmetric; a JWKS verifies asymmetric signatures only"
            )));
        }
        let keys = self.current();
        let key = keys
            .select(header.kid.as_deref(), alg)
            .ok_or_else(|| TokenError::NoKey {
                kid: header.kid.clone(),
                alg: format!("{alg:?}"),
            })?;
        // The signature only: the claims are checked below, by Kafka's rules.
        let mut v = Validation::new(alg);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        v.validate_nbf = false;
        v.validate_aud = false;
        v.leeway = 0;
        let data = jsonwebtoken::decode::<Value>(jws, &key.key, &v)
            .map_err(|e| TokenError::Signature(e.to_string()))?;
        self.rules.check(&data.claims, now_ms)
    }
}

/// A NumericDate claim (seconds, maybe fractional) in ms.
fn date_ms(claims: &Value, name: &str) -> Result<Option<i64>, TokenError> {
    match claims.get(name) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|f| f.is_finite())
            .map(|f| Some((f * 1000.0) as i64))
            .ok_or_else(|| TokenError::Claim(name.to_string())),
    }
}

impl ClaimRules {
    /// Checks the claims of a token whose signature verified.
    pub fn check(&self, claims: &Value, now_ms: i64) -> Result<ValidToken, TokenError> {
        let skew = self.clock_skew_ms;
        let exp = date_ms(claims, "exp")?.ok_or_else(|| TokenError::Claim("exp".into()))?;
        let iat = date_ms(claims, "iat")?.ok_or_else(|| TokenError::Claim("iat".into()))?;
        if iat > exp {
            return Err(TokenError::IssuedAfterExpiry);
        }
        if now_ms - skew >= exp {
            return Err(TokenError::Expired);
        }
        if date_ms(claims, "nbf")?.is_some_and(|nbf| now_ms + skew < nbf) {
            return Err(TokenError::NotYetValid);
        }
        if !self.expected_audience.is_empty() {
            let aud: Vec<&str> = match claims.get("aud") {
                Some(Value::String(a)) => vec![a.as_str()],
                Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if !aud
                .iter()
                .any(|a| self.expected_audience.iter().any(|e| e == a))
            {
                return Err(TokenError::Audience);
            }
        }
        if let Some(iss) = &self.expected_issuer {
            if claims.get("iss").and_then(Value::as_str) != Some(iss.as_str()) {
                return Err(TokenError::Issuer);
            }
        }
        let principal = claims
            .get(&self.sub_claim)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| TokenError::Claim(self.sub_claim.clone()))?;
        Ok(ValidToken {
            principal: principal.to_string(),
            expires_at_ms: exp,
        })
    }
}

#[cfg(test)]
#[path = "oauth_tests.rs"]
mod tests;
