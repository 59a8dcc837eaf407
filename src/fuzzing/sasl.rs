//! What an unauthenticated client can send a SASL listener: each
//! mechanism's tokens, through the broker's own exchanges (PLAIN,
//! SCRAM-SHA-256/512 both steps, OAUTHBEARER and its error round), and the
//! JAAS and principal-rule parsers an operator's settings reach.

use std::collections::BTreeMap;

use super::Violation;
use crate::security::jaas::JaasConfig;
use crate::security::oauth::{ClaimRules, JwksKeys, JwksValidator};
use crate::security::principal::PrincipalRules;
use crate::security::sasl::{
    CredentialSource, Mechanism, OAuthValidator, SaslExchange, SaslServerConfig, Step,
};
use crate::security::scram::{ScramCredential, ScramMechanism};

struct Users(BTreeMap<(String, ScramMechanism), ScramCredential>);

impl CredentialSource for Users {
    fn scram(&self, user: &str, m: ScramMechanism) -> Option<ScramCredential> {
        self.0.get(&(user.to_string(), m)).cloned()
    }
}

/// A JWKS validator whose keys (RSA, EC P-256, Ed25519) are well formed
/// but made up.
fn jwks_validator() -> Result<OAuthValidator, crate::security::oauth::JwksError> {
    let b = |n: usize, v: u8| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(vec![v; n])
    };
    let set = serde_json::json!({"keys": [
        {"kty": "RSA", "kid": "r", "n": b(256, 0xc5), "e": "AQAB"},
        {"kty": "EC", "crv": "P-256", "kid": "e", "x": b(32, 1), "y": b(32, 2)},
        {"kty": "OKP", "crv": "Ed25519", "kid": "d", "x": b(32, 3)},
    ]});
    let keys = JwksKeys::parse(set.to_string().as_bytes())?;
    Ok(OAuthValidator::Jwks(std::sync::Arc::new(
        JwksValidator::new(keys, ClaimRules::default()),
    )))
}

/// Takes bytes: the first selects the mechanism (OAUTHBEARER with the high
/// bit set: the JWKS validator), the rest is split at the
/// first `0xff` into two client tokens; runs them through a fresh
/// exchange (a known SCRAM user `u` included) and checks that only a valid
/// exchange authenticates, and as the user it named. The same bytes go to
/// the JAAS and mapping-rule parsers.
pub fn sasl_tokens(data: &[u8]) -> Result<(), Violation> {
    let Some((&selector, rest)) = data.split_first() else {
        return Ok(());
    };
    let mechanism = match selector % 4 {
        0 => Mechanism::Plain,
        1 => Mechanism::Scram(ScramMechanism::Sha256),
        2 => Mechanism::Scram(ScramMechanism::Sha512),
        _ => Mechanism::OAuthBearer,
    };
    let (first, second) = match rest.iter().position(|b| *b == 0xff) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &rest[rest.len()..]),
    };
    let config = SaslServerConfig {
        mechanisms: vec![mechanism],
        plain_users: [("u".to_string(), "p".to_string())].into(),
        fake_salt_secret: b"fuzz".to_vec(),
        // OAUTHBEARER with the high bit set: Kafka's JWKS validator, over
        // keys no one holds the private half of (the points and modulus are
        // made up), so no token may pass; the header, key choice and
        // signature paths still run on the input.
        oauth: if selector >= 0x80 {
            jwks_validator().map_err(|e| format!("the fuzz key set does not parse: {e}"))?
        } else {
            OAuthValidator::default()
        },
        ..Default::default()
    };
    let users = Users(
        [ScramMechanism::Sha256, ScramMechanism::Sha512]
            .into_iter()
            .map(|m| {
                (
                    ("u".to_string(), m),
                    ScramCredential::from_password(m, "p", b"salt".to_vec(), 4096),
                )
            })
            .collect(),
    );
    let mut ex = SaslExchange::new(mechanism);
    let now = 1_700_000_000_000;
    for token in [first, second] {
        match ex.step(token, &config, &users, now, "nonce") {
            Ok(Step::Done { principal, .. }) => {
                if selector >= 0x80 && mechanism == Mechanism::OAuthBearer {
                    return Err(format!(
                        "OAUTHBEARER authenticated {principal} against made-up JWKS keys"
                    ));
                }
                if mechanism == Mechanism::Plain && principal.name != "u" {
                    return Err(format!(
                        "PLAIN authenticated {principal} without its password"
                    ));
                }
                if matches!(mechanism, Mechanism::Scram(_)) {
                    // A SCRAM proof cannot be guessed: no fuzz input gets
                    // through the second step.
                    return Err(format!("SCRAM authenticated {principal}"));
                }
                break;
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    if let Ok(text) = std::str::from_utf8(rest) {
        let _ = JaasConfig::parse(text);
        if let Ok(rules) = PrincipalRules::parse(text) {
            let _ = rules.map("CN=a,OU=b,O=c");
        }
    }
    Ok(())
}
