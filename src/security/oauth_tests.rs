//! The JWKS validator's cases: ES256 keys made here with ring, tokens signed
//! with jsonwebtoken, each case one row.

use super::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;
use jsonwebtoken::{EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::json;

const NOW_MS: i64 = 1_800_000_000_000;
const NOW: i64 = NOW_MS / 1000;

struct TestKey {
    pkcs8: Vec<u8>,
    jwk: Value,
}

fn es256_key(kid: &str) -> TestKey {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let point = pair.public_key().as_ref();
    assert_eq!(point.len(), 65);
    TestKey {
        pkcs8: pkcs8.as_ref().to_vec(),
        jwk: json!({
            "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
            "x": B64URL.encode(&point[1..33]), "y": B64URL.encode(&point[33..]),
        }),
    }
}

fn sign(key: &TestKey, kid: Option<&str>, claims: &Value) -> String {
    let mut h = Header::new(Algorithm::ES256);
    h.kid = kid.map(str::to_string);
    jsonwebtoken::encode(&h, claims, &EncodingKey::from_ec_der(&key.pkcs8)).unwrap()
}

fn rules() -> ClaimRules {
    ClaimRules {
        expected_audience: vec!["fjord".into(), "kafka".into()],
        expected_issuer: Some("https://issuer.test".into()),
        ..ClaimRules::default()
    }
}

fn good_claims() -> Value {
    json!({"sub": "alice", "iat": NOW - 10, "exp": NOW + 600,
           "aud": "fjord", "iss": "https://issuer.test", "scope": "produce consume"})
}

fn with(mut claims: Value, key: &str, v: Value) -> Value {
    claims[key] = v;
    claims
}

fn without(mut claims: Value, key: &str) -> Value {
    claims.as_object_mut().unwrap().remove(key);
    claims
}

/// A token's principal and expiry (ms), or why it is refused.
type Outcome = Result<(String, i64), TokenError>;

#[test]
fn token_cases() {
    let k1 = es256_key("k1");
    let other = es256_key("k1");
    let set = json!({"keys": [k1.jwk,
        {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
        {"kty": "RSA", "use": "enc", "n": "AQAB", "e": "AQAB", "kid": "enc"}]});
    let keys = JwksKeys::parse(set.to_string().as_bytes()).unwrap();
    assert_eq!(keys.len(), 1, "oct and encryption keys are skipped");
    let v = JwksValidator::new(keys, rules());
    let g = good_claims;
    let ok = |p: &str, exp: i64| Ok::<_, TokenError>((p.to_string(), exp * 1000));
    let alg_none = format!(
        "{}.{}.",
        B64URL.encode(br#"{"alg":"none"}"#),
        B64URL.encode(g().to_string())
    );
    let hs256 = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &g(),
        &EncodingKey::from_secret(b"secret"),
    )
    .unwrap();
    let cases: Vec<(&str, String, Outcome)> = vec![
        ("valid", sign(&k1, Some("k1"), &g()), ok("alice", NOW + 600)),
        (
            "no kid, the one key",
            sign(&k1, None, &g()),
            ok("alice", NOW + 600),
        ),
        (
            "audience in a list",
            sign(&k1, Some("k1"), &with(g(), "aud", json!(["x", "kafka"]))),
            ok("alice", NOW + 600),
        ),
        (
            "expired within the skew",
            sign(
                &k1,
                Some("k1"),
                &with(with(g(), "iat", json!(NOW - 100)), "exp", json!(NOW - 10)),
            ),
            ok("alice", NOW - 10),
        ),
        (
            "scope as a list",
            sign(&k1, Some("k1"), &with(g(), "scope", json!(["a", "b"]))),
            ok("alice", NOW + 600),
        ),
        (
            "another key",
            sign(&other, Some("k1"), &g()),
            Err(TokenError::Signature(String::new())),
        ),
        (
            "unknown kid",
            sign(&k1, Some("k9"), &g()),
            Err(TokenError::NoKey {
                kid: Some("k9".into()),
                alg: "ES256".into(),
            }),
        ),
        (
            "expired",
            sign(
                &k1,
                Some("k1"),
                &with(with(g(), "iat", json!(NOW - 100)), "exp", json!(NOW - 30)),
            ),
            Err(TokenError::Expired),
        ),
        (
            "no exp",
            sign(&k1, Some("k1"), &without(g(), "exp")),
            Err(TokenError::Claim("exp".into())),
        ),
        (
            "exp as text",
            sign(&k1, Some("k1"), &with(g(), "exp", json!("99999999999"))),
            Err(TokenError::Claim("exp".into())),
        ),
        (
            "no iat",
            sign(&k1, Some("k1"), &without(g(), "iat")),
            Err(TokenError::Claim("iat".into())),
        ),
        (
            "iat ahead of the clock",
            sign(&k1, Some("k1"), &with(g(), "iat", json!(NOW + 200))),
            ok("alice", NOW + 600),
        ),
        (
            "iat after exp",
            sign(&k1, Some("k1"), &with(g(), "iat", json!(NOW + 601))),
            Err(TokenError::IssuedAfterExpiry),
        ),
        (
            "nbf within the skew",
            sign(&k1, Some("k1"), &with(g(), "nbf", json!(NOW + 20))),
            ok("alice", NOW + 600),
        ),
        (
            "nbf ahead",
            sign(&k1, Some("k1"), &with(g(), "nbf", json!(NOW + 31))),
            Err(TokenError::NotYetValid),
        ),
        (
            "wrong audience",
            sign(&k1, Some("k1"), &with(g(), "aud", json!("other"))),
            Err(TokenError::Audience),
        ),
        (
            "no audience",
            sign(&k1, Some("k1"), &without(g(), "aud")),
            Err(TokenError::Audience),
        ),
        (
            "wrong issuer",
            sign(
                &k1,
                Some("k1"),
                &with(g(), "iss", json!("https://evil.test")),
            ),
            Err(TokenError::Issuer),
        ),
        (
            "no sub",
            sign(&k1, Some("k1"), &without(g(), "sub")),
            Err(TokenError::Claim("sub".into())),
        ),
        (
            "blank sub",
            sign(&k1, Some("k1"), &with(g(), "sub", json!("  "))),
            Err(TokenError::Claim("sub".into())),
        ),
        (
            "scope a number (not checked)",
            sign(&k1, Some("k1"), &with(g(), "scope", json!(7))),
            ok("alice", NOW + 600),
        ),
    ];
    for (name, token, want) in cases {
        let got = v
            .validate(&token, NOW_MS)
            .map(|t| (t.principal, t.expires_at_ms))
            .map_err(|e| match e {
                TokenError::Signature(_) => TokenError::Signature(String::new()),
                e => e,
            });
        assert_eq!(got, want, "{name}");
    }
    for (name, token) in [
        ("alg none", alg_none),
        ("HS256", hs256),
        ("garbage", "garbage".to_string()),
    ] {
        assert!(
            matches!(v.validate(&token, NOW_MS), Err(TokenError::Malformed(_))),
            "{name}"
        );
    }
}

#[test]
fn claim_names_and_unchecked_audience() {
    let k = es256_key("k");
    let v = JwksValidator::new(
        JwksKeys::parse(json!({"keys": [k.jwk]}).to_string().as_bytes()).unwrap(),
        ClaimRules {
            sub_claim: "client_id".into(),
            scope_claim: "scp".into(),
            clock_skew_ms: 0,
            ..ClaimRules::default()
        },
    );
    let claims = json!({"client_id": "svc", "iat": NOW, "exp": NOW + 1, "aud": "any",
                        "iss": "anyone", "scope": 5});
    let t = v.validate(&sign(&k, Some("k"), &claims), NOW_MS).unwrap();
    assert_eq!(t.principal, "svc");
    let expired = with(claims, "exp", json!(NOW));
    assert_eq!(
        v.validate(&sign(&k, Some("k"), &expired), NOW_MS),
        Err(TokenError::Expired)
    );
}

#[test]
fn key_sets() {
    assert!(matches!(
        JwksKeys::parse(b"not json"),
        Err(JwksError::Malformed(_))
    ));
    assert!(matches!(
        JwksKeys::parse(br#"{"kid":"x"}"#),
        Err(JwksError::Malformed(_))
    ));
    assert_eq!(
        JwksKeys::parse(br#"{"keys":[{"kty":"oct","k":"AA"}]}"#).unwrap_err(),
        JwksError::NoKeys(1)
    );
    // Two keys fit for ES256 and the token names none: no choice.
    let (a, b) = (es256_key("a"), es256_key("b"));
    let set = json!({"keys": [a.jwk, b.jwk]}).to_string();
    let v = JwksValidator::new(
        JwksKeys::parse(set.as_bytes()).unwrap(),
        ClaimRules::default(),
    );
    let c = json!({"sub": "x", "iat": NOW, "exp": NOW + 60});
    assert!(matches!(
        v.validate(&sign(&a, None, &c), NOW_MS),
        Err(TokenError::NoKey { .. })
    ));
    assert!(v.validate(&sign(&b, Some("b"), &c), NOW_MS).is_ok());
    // A refresh replaces the keys: a's tokens pass only while a is there.
    v.replace_keys(JwksKeys::parse(json!({"keys": [b.jwk]}).to_string().as_bytes()).unwrap());
    assert!(v.validate(&sign(&a, Some("a"), &c), NOW_MS).is_err());
}

#[test]
fn the_refresh_thread_reads_the_file_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    let (a, b) = (es256_key("a"), es256_key("b"));
    std::fs::write(&path, json!({"keys": [a.jwk]}).to_string()).unwrap();
    let file = JwksFile {
        key: "sasl.oauthbearer.jwks.endpoint.url".into(),
        path: path.clone(),
    };
    let v = Arc::new(JwksValidator::new(
        file.load().unwrap(),
        ClaimRules::default(),
    ));
    JwksValidator::refresh_from(&v, file, Duration::from_millis(20));
    let c = json!({"sub": "x", "iat": NOW, "exp": NOW + 60});
    let tb = sign(&b, Some("b"), &c);
    assert!(v.validate(&tb, NOW_MS).is_err());
    std::fs::write(&path, "{ broken").unwrap();
    std::fs::write(&path, json!({"keys": [b.jwk]}).to_string()).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while v.validate(&tb, NOW_MS).is_err() {
        assert!(std::time::Instant::now() < deadline, "b's key never read");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The broker's start with Kafka's keys: the handler class turns the JWKS
/// validator on; a bad file or an https URL stops the start naming the key
/// and the file.
#[test]
fn settings_at_start() {
    use crate::config::Config;
    use crate::security::{sasl::OAuthValidator, Security, SecurityError};
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [es256_key("k").jwk]}).to_string()).unwrap();
    let url = format!("file://{}", jwks.display());
    let start = |extra: &[(&str, &str)]| {
        let mut c = Config::default();
        for (k, v) in [
            (
                "listeners",
                "SASL_PLAINTEXT://127.0.0.1:0,BROKER://127.0.0.1:0",
            ),
            (
                "listener.security.protocol.map",
                "SASL_PLAINTEXT:SASL_PLAINTEXT,BROKER:PLAINTEXT",
            ),
            ("inter.broker.listener.name", "BROKER"),
            ("sasl.enabled.mechanisms", "OAUTHBEARER"),
        ]
        .iter()
        .chain(extra)
        {
            c.set(k, v).unwrap();
        }
        Security::from_config(&c)
    };
    let validator = |s: &Security| {
        s.listener("SASL_PLAINTEXT")
            .and_then(|l| l.sasl.clone())
            .map(|s| s.oauth.clone())
            .unwrap()
    };
    let class = (
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class",
        VALIDATOR_HANDLER,
    );
    // Without the class: Kafka's unsecured validator, the URL unused.
    let s = start(&[("sasl.oauthbearer.jwks.endpoint.url", &url)]).unwrap();
    assert!(matches!(validator(&s), OAuthValidator::Unsecured(_)));
    // With it, per listener keys winning over the broker's.
    let s = start(&[
        class,
        ("sasl.oauthbearer.jwks.endpoint.url", &url),
        ("sasl.oauthbearer.expected.audience", "a, b"),
        (
            "listener.name.sasl_plaintext.sasl.oauthbearer.expected.issuer",
            "https://i",
        ),
        ("sasl.oauthbearer.expected.issuer", "https://other"),
        ("sasl.oauthbearer.sub.claim.name", "client_id"),
        ("sasl.oauthbearer.clock.skew.seconds", "5"),
    ])
    .unwrap();
    let OAuthValidator::Jwks(v) = validator(&s) else {
        panic!("the JWKS validator expected")
    };
    assert_eq!(
        v.rules,
        ClaimRules {
            expected_audience: vec!["a".into(), "b".into()],
            expected_issuer: Some("https://i".into()),
            sub_claim: "client_id".into(),
            scope_claim: "scope".into(),
            clock_skew_ms: 5000,
        }
    );
    // What stops the start.
    let missing = format!("file://{}/none.json", dir.path().display());
    let err = start(&[class, ("sasl.oauthbearer.jwks.endpoint.url", &missing)])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("sasl.oauthbearer.jwks.endpoint.url") && err.contains("none.json"),
        "{err}"
    );
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"keys\": 5}").unwrap();
    let broken_url = format!("file://{}", broken.display());
    let err = start(&[
        class,
        (
            "listener.name.sasl_plaintext.sasl.oauthbearer.jwks.endpoint.url",
            &broken_url,
        ),
    ])
    .unwrap_err();
    assert!(
        matches!(&err, SecurityError::Jwks { key, file, .. }
            if key == "listener.name.sasl_plaintext.sasl.oauthbearer.jwks.endpoint.url"
                && file.ends_with("broken.json")),
        "{err}"
    );
    for url in ["https://idp.example/jwks", "jwks.json"] {
        let err = start(&[class, ("sasl.oauthbearer.jwks.endpoint.url", url)]).unwrap_err();
        assert!(
            matches!(&err, SecurityError::Invalid { key, .. } if key == "sasl.oauthbearer.jwks.endpoint.url"),
            "{err}"
        );
    }
    let err = start(&[class]).unwrap_err();
    assert!(matches!(err, SecurityError::Missing { .. }), "{err}");
    let err = start(&[(class.0, "com.example.Handler")]).unwrap_err();
    assert!(matches!(err, SecurityError::Invalid { .. }), "{err}");
}
